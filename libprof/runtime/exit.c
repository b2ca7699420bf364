/* The reports a profiled process writes when it ends, where the environment
 * says (MEMPROF_OUTPUT, MEMPROF_DUMP, MEMPROF_HEAP_OUTPUT, MEMPROF_HEAP_PPROF):
 * "none", "stderr", or a path in which %p is the pid. */
#include "runtime.h"
#include "../trace/heap.h"
#include "../trace/heap_ruby.h"
#include "../trace/ruby.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The process whose reports go to the paths given; every other process
 * that inherits them (a child, a fork) writes its own beside them. */
static pid_t owner_pid;
static bool ruby_report_wanted;
static int ruby_report_flags;
static unsigned long ruby_report_top;

void exit_reports_init(unsigned long owner)
{
    /* The first profiled process of a tree owns the report paths. */
    owner_pid = owner ? (pid_t)owner : getpid();
    if (!owner) {
        char text[24];
        struct out o;
        out_init_fd(&o, -1, text, sizeof text);
        out_u64(&o, (uint64_t)owner_pid);
        out_finish(&o);
        setenv("MEMPROF_OWNER_PID", text, 1);
    }
}

/* This process's name (/proc/self/comm) with only [A-Za-z0-9._-] kept. */
static void write_process_name(struct out *o)
{
    char comm[32];
    int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, comm, sizeof comm - 1) : -1;
    if (fd >= 0)
        close(fd);
    bool any = false;
    for (ssize_t i = 0; i < n; i++) {
        char c = comm[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '.' || c == '_' || c == '-') {
            out_char(o, c);
            any = true;
        }
    }
    if (!any)
        out_str(o, "process");
}

/* Where this process writes a report that `spec` names: %p becomes the pid;
 * a process other than the owner writes SPEC.PID.NAME beside it, so that no
 * profiled process replaces another's report. False if it does not fit. */
static bool expand_output_path(const char *spec, char *path, size_t size)
{
    struct out o;
    out_init_fd(&o, -1, path, size);
    bool has_pid = false;
    for (const char *p = spec; *p; p++) {
        if (p[0] == '%' && p[1] == 'p') {
            out_u64(&o, (uint64_t)getpid());
            has_pid = true;
            p++;
        } else {
            out_char(&o, *p);
        }
    }
    if (!has_pid && getpid() != owner_pid) {
        out_char(&o, '.');
        out_u64(&o, (uint64_t)getpid());
        out_char(&o, '.');
        write_process_name(&o);
    }
    return out_finish(&o) == 0;
}

/* A report where `spec` says, with `suffix` appended to a path; on stderr
 * after `header`, the pid and `header_end` when a header is given. */
static void report_at_exit_to(const char *spec, const char *suffix, const struct report_request *r,
                              const char *header, const char *header_end)
{
    if (!spec || !*spec || strcmp(spec, "none") == 0)
        return;
    char path[PATH_MAX];
    int status;
    if (strcmp(spec, "stderr") == 0) {
        if (header) {
            struct out o;
            char buf[128];
            out_init_fd(&o, STDERR_FILENO, buf, sizeof buf);
            out_str(&o, header);
            out_u64(&o, (uint64_t)getpid());
            out_str(&o, header_end);
            out_finish(&o);
        }
        status = report_to_fd(STDERR_FILENO, r);
    } else if (expand_output_path(spec, path, sizeof path) &&
               strlen(path) + strlen(suffix) < sizeof path) {
        strcat(path, suffix);
        status = report_to_file(path, r);
    } else {
        say("memprof: cannot write the report to ", spec, ": ", strerror(ENAMETOOLONG), (char *)NULL);
        return;
    }
    if (status != MEMPROF_OK)
        say(memprof_text(), (char *)NULL);
}

void exit_reports_want_ruby(bool wanted, int flags, unsigned long top)
{
    ruby_report_wanted = wanted;
    ruby_report_flags = flags;
    ruby_report_top = top;
}

/* From a Ruby end proc: after the program's own at_exit handlers, while the
 * heap is still whole. */
void ruby_report_at_exit(void)
{
    if (!ruby_tracer_running() || !ruby_report_wanted)
        return;
    const char *spec = getenv("MEMPROF_OUTPUT");
    bool bytes = ruby_report_flags & MEMPROF_REPORT_BYTES;
    report_at_exit_to(getenv("MEMPROF_DUMP"), "", &(struct report_request){ .kind = MEMPROF_REPORT_RUBY_JSON },
                      NULL, NULL);
    report_at_exit_to(spec && *spec ? spec : "stderr", "",
                      &(struct report_request){ .kind = MEMPROF_REPORT_RUBY, .flags = ruby_report_flags,
                                                .top = ruby_report_top, .filter = getenv("MEMPROF_FILTER") },
                      "== memprof: live Ruby objects at exit of pid ",
                      bytes ? " (count bytes file:line:Class) ==\n" : " (count file:line:Class) ==\n");
    ruby_tracer_stop();
}

/* From every process that traced its heap: at exit; in a Ruby process at
 * the end of the program, from the VM's end procs, before its teardown frees
 * what live objects hold (libxml2 documents, ...), and at exit again, into
 * SPEC.teardown, what teardown left: leaks. */
static bool heap_reported_at_end;

static void write_heap_reports(const char *suffix, bool with_pprof)
{
    int flags = env_says_yes("MEMPROF_HEAP_BY_THREAD") ? MEMPROF_REPORT_BY_THREAD : 0;
    report_at_exit_to(getenv("MEMPROF_HEAP_OUTPUT"), suffix,
                      &(struct report_request){ .kind = MEMPROF_REPORT_HEAP, .flags = flags }, NULL, NULL);
    if (with_pprof)
        report_at_exit_to(getenv("MEMPROF_HEAP_PPROF"), suffix,
                          &(struct report_request){ .kind = MEMPROF_REPORT_HEAP_PPROF }, NULL, NULL);
}

static void heap_report_at_program_end(void)
{
    if (!heap_tracer_running() || heap_reported_at_end)
        return;
    heap_reported_at_end = true;
    write_heap_reports("", true);
}

static void heap_report_at_exit(void)
{
    if (!heap_tracer_running())
        return;
    write_heap_reports(heap_reported_at_end ? ".teardown" : "", !heap_reported_at_end);
    heap_tracer_stop();
}

void exit_reports_want_heap(void)
{
    heap_ruby_at_program_end(heap_report_at_program_end);
    atexit(heap_report_at_exit);
}
