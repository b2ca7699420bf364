/* The reports a profiled process writes when it ends, where the environment
 * says (MEMPROF_OUTPUT, MEMPROF_DUMP, MEMPROF_RUBY_TABLE, MEMPROF_HEAP_OUTPUT,
 * MEMPROF_HEAP_PPROF):
 * "none", "stderr", or a path in which %p is the pid. */
#include "runtime.h"
#include "../trace/heap/heap.h"
#include "../trace/heap/heap_ruby.h"
#include "../trace/ruby/ruby.h"
#include "../util/reentry.h"
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

void exit_reports_init(unsigned long owner, unsigned long owner_parent)
{
    if (owner) {
        owner_pid = (pid_t)owner;
        return;
    }
    /* memprof run gives its own pid (it spawns COMMAND before it knows
     * COMMAND's): its child owns the paths, and no other process does. */
    if (owner_parent && (unsigned long)getppid() != owner_parent) {
        owner_pid = 0;
        return;
    }
    /* Else the first profiled process of a tree owns them. */
    owner_pid = getpid();
    char text[24];
    struct out o;
    out_init_fd(&o, -1, text, sizeof text);
    out_u64(&o, (uint64_t)owner_pid);
    out_finish(&o);
    env_set_for_children("MEMPROF_OWNER_PID", text);
}

bool exit_reports_owner(void)
{
    return getpid() == owner_pid;
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
bool expand_output_path(const char *spec, char *path, size_t size)
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

/* Whether a report goes anywhere where `spec` says. */
static bool spec_writes(const char *spec)
{
    return spec && *spec && strcmp(spec, "none") != 0;
}

/* A report where `spec` says, with `suffix` appended to a path: its status;
 * memprof_text() says why when it is not MEMPROF_OK. */
static int write_report_to(const char *spec, const char *suffix, const struct report_request *r)
{
    char path[PATH_MAX];
    if (strcmp(spec, "stderr") == 0)
        return report_to_fd(STDERR_FILENO, r);
    if (expand_output_path(spec, path, sizeof path) && strlen(path) + strlen(suffix) < sizeof path) {
        strcat(path, suffix);
        return report_to_file(path, r);
    }
    say("memprof: cannot write the report to ", spec, ": ", strerror(ENAMETOOLONG), (char *)NULL);
    return MEMPROF_OK;   /* said */
}

static void report_at_exit_to(const char *spec, const char *suffix, const struct report_request *r)
{
    if (spec_writes(spec) && write_report_to(spec, suffix, r) != MEMPROF_OK)
        say(memprof_text(), (char *)NULL);
}

void exit_reports_want_ruby(bool wanted, int flags, unsigned long top)
{
    ruby_report_wanted = wanted;
    ruby_report_flags = flags;
    ruby_report_top = top;
}

static const char *ruby_output(void)
{
    const char *spec = env_get("MEMPROF_OUTPUT");
    return spec && *spec ? spec : "stderr";
}

/* One GC for the Ruby reports, before the first (a dump retains what a
 * table does), when `gc_flag` asks and any is written: the GC's state.
 * Run from a frame of its own, before write_ruby_reports' frame holds the
 * requests it has yet to fill: Ruby's GC scans the machine stack
 * conservatively, and a stale copy of a dead object's address in that
 * storage would keep the object (readme.test's test.rb:13 String). */
static __attribute__((noinline)) int ruby_reports_gc(int gc_flag)
{
    bool written = spec_writes(ruby_output()) || spec_writes(env_get("MEMPROF_DUMP")) ||
                   spec_writes(env_get("MEMPROF_RUBY_TABLE"));
    return gc_flag && written ? (int)ruby_tracer_collect() : 0;
}

/* The Ruby reports; `when` says at what ("exit", "SIGSEGV"); `gc`:
 * ruby_reports_gc's. */
static __attribute__((noinline)) void write_ruby_reports(const char *when, int gc)
{
    const char *spec = ruby_output();
    char header[48];
    struct out h;
    out_init_fd(&h, -1, header, sizeof header);
    out_str(&h, "at ");
    out_str(&h, when);
    out_str(&h, " of");
    out_finish(&h);
    report_at_exit_to(env_get("MEMPROF_DUMP"), "",
                      &(struct report_request){ .kind = MEMPROF_REPORT_RUBY_JSON, .gc = gc });
    /* The whole table with bytes and allocated counts, for `memprof run
     * --pprof-proto` and `--group`; with the strings for `--strings`. */
    report_at_exit_to(env_get("MEMPROF_RUBY_TABLE"), "",
                      &(struct report_request){ .kind = MEMPROF_REPORT_RUBY, .gc = gc, .when = header,
                                                .flags = ruby_report_flags | MEMPROF_REPORT_BYTES |
                                                         MEMPROF_REPORT_ALLOCATED | MEMPROF_REPORT_UNSORTED |
                                                         (env_get("MEMPROF_STRINGS") ? MEMPROF_REPORT_STRINGS : 0) });
    report_at_exit_to(spec, "",
                      &(struct report_request){ .kind = MEMPROF_REPORT_RUBY, .flags = ruby_report_flags, .gc = gc,
                                                .when = header, .top = ruby_report_top,
                                                .filter = env_get("MEMPROF_FILTER") });
}

/* From a Ruby end proc: after the program's own at_exit handlers, while the
 * heap is still whole. */
void ruby_report_at_exit(void)
{
    if (!ruby_tracer_running() || !ruby_report_wanted)
        return;
    write_ruby_reports("exit", ruby_reports_gc(ruby_report_flags & MEMPROF_REPORT_GC));
    ruby_tracer_stop_at_exit();
}

/* From every process that traced its heap: at exit; in a Ruby process at
 * the end of the program, from the VM's end procs, before its teardown frees
 * what live objects hold (libxml2 documents, ...), and at exit again, into
 * SPEC.teardown, what teardown left: leaks. */
static bool heap_reported_at_end;
/* MEMPROF_HEAP_AT_PEAK: the main report is the peak's snapshot. */
static bool heap_at_peak;

int heap_flags(void)
{
    return (env_says_yes("MEMPROF_HEAP_BY_THREAD") ? MEMPROF_REPORT_BY_THREAD : 0) |
           (env_says_yes("MEMPROF_HEAP_FREED_SITES") ? MEMPROF_REPORT_FREED_SITES : 0);
}

/* `preface`: lines before the raw report (NULL: none). `last`: from the
 * exit handler, after which no report of this process replaces it or
 * follows it: it ends "# final", and memprof run names it while the process
 * ends. What teardown left (.teardown) is the table at exit, also with
 * --at-peak. */
static void write_heap_reports(const char *suffix, bool with_pprof, const char *preface, bool last)
{
    bool peak = heap_at_peak && !*suffix;
    report_at_exit_to(env_get("MEMPROF_HEAP_OUTPUT"), suffix,
                      &(struct report_request){ .kind = peak ? MEMPROF_REPORT_HEAP_PEAK : MEMPROF_REPORT_HEAP,
                                                .flags = heap_flags(), .preface = peak ? NULL : preface,
                                                .trailer = last ? HEAP_RAW_FINAL : NULL });
    if (with_pprof)
        report_at_exit_to(env_get("MEMPROF_HEAP_PPROF"), suffix,
                          &(struct report_request){ .kind = MEMPROF_REPORT_HEAP_PPROF });
}

static void heap_report_at_program_end(void)
{
    if (!heap_tracer_running() || heap_reported_at_end)
        return;
    heap_reported_at_end = true;
    write_heap_reports("", true, NULL, false);   /* teardown's follows */
}

static void heap_report_at_exit(void)
{
    if (!heap_tracer_running())
        return;
    write_heap_reports(heap_reported_at_end ? ".teardown" : "", !heap_reported_at_end, NULL, true);
    heap_tracer_stop_at_exit();
}

void exit_reports_want_heap(bool at_peak)
{
    heap_at_peak = at_peak;
    heap_ruby_at_program_end(heap_report_at_program_end);
    atexit(heap_report_at_exit);
}

/* From signals.c's handler: the reports this process would write at exit,
 * now, before the signal ends it. The raw heap report says which signal
 * ("# signal N NAME"), for `memprof run` to say so. */
void exit_reports_at_signal(int number)
{
    bool entered = reentry_enter();   /* whatever the report does is memprof's */
    if (ruby_tracer_running() && ruby_report_wanted)
        write_ruby_reports(signal_name(number), 0);   /* no GC in a signal handler */
    if (heap_tracer_running() && !heap_reported_at_end) {
        char preface[64];
        struct out p;
        out_init_fd(&p, -1, preface, sizeof preface);
        out_str(&p, "# signal ");
        out_u64(&p, (uint64_t)number);
        out_char(&p, ' ');
        out_str(&p, signal_name(number));
        out_char(&p, '\n');
        out_finish(&p);
        write_heap_reports("", true, preface, false);   /* replaced at exit if the process lives on */
    }
    if (entered)
        reentry_leave();
}

/* The heap's peak snapshot, now, where `spec` says (peak.c): MEMPROF_BUSY,
 * unsaid, while a hook takes a snapshot; the caller tries again. */
int exit_reports_heap_peak_to(const char *spec)
{
    int status = write_report_to(spec, "", &(struct report_request){ .kind = MEMPROF_REPORT_HEAP_PEAK,
                                                                   .flags = heap_flags() });
    if (status != MEMPROF_OK && status != MEMPROF_BUSY)
        say(memprof_text(), (char *)NULL);
    return status;
}
