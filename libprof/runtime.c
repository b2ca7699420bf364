/* libmemprof.so: loaded by LD_PRELOAD (memprof run, GDB's `run`) or by dlopen.
 * It stays inert in processes without a Ruby VM: children such as sh or make
 * inherit LD_PRELOAD and must behave exactly as without it. */
#include "memprof.h"
#include "hook/got.h"
#include "trace/heap.h"
#include "trace/heap_custom.h"
#include "hook/pool.h"
#include "trace/ruby.h"
#include "trace/threads.h"
#include "util/atomic_file.h"
#include "util/out.h"
#include "util/pages.h"
#include "util/reentry.h"
#include "trace/heap_ruby.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

static int last_status;
static bool report_at_exit_wanted;
static struct out report_text;
/* The process whose reports go to the paths given; every other process
 * that inherits them (a child, a fork) writes its own beside them. */
static pid_t owner_pid;
static char io_error_text[PATH_MAX + 128];

static enum memprof_status from_ruby(enum ruby_status s)
{
    switch (s) {
    case RUBY_OK: return MEMPROF_OK;
    case RUBY_NOT_RUBY: return MEMPROF_NOT_RUBY;
    case RUBY_BUSY: return MEMPROF_BUSY;
    case RUBY_IN_GC: return MEMPROF_IN_GC;
    case RUBY_HOOK_FAILED: return MEMPROF_HOOK_FAILED;
    case RUBY_NO_MEMORY: return MEMPROF_NO_MEMORY;
    case RUBY_BAD_ARGUMENT: return MEMPROF_BAD_ARGUMENT;
    }
    return MEMPROF_NO_MEMORY;
}

static int from_heap(enum heap_status s)
{
    switch (s) {
    case HEAP_OK: return MEMPROF_OK;
    case HEAP_BUSY: return MEMPROF_BUSY;
    case HEAP_HOOK_FAILED: return MEMPROF_HOOK_FAILED;
    case HEAP_NO_MEMORY: return MEMPROF_NO_MEMORY;
    case HEAP_OFF: return MEMPROF_OK;
    }
    return MEMPROF_NO_MEMORY;
}

static int set_status(int status)
{
    last_status = status;
    return status;
}

EXPORT const char *memprof_version(void)
{
    return PACKAGE_VERSION;
}

EXPORT unsigned long memprof_tracked_objects(void)
{
    unsigned long objects, bytes;
    ruby_tracer_usage(&objects, &bytes);
    return objects;
}

EXPORT unsigned long memprof_table_bytes(void)
{
    unsigned long objects, bytes;
    ruby_tracer_usage(&objects, &bytes);
    return bytes;
}

EXPORT const char *memprof_strerror(int status)
{
    switch (status) {
    case MEMPROF_OK:
        return ruby_tracer_running() ? "memprof: recording" : "memprof: stopped";
    case MEMPROF_NOT_RUBY:
        return "memprof: no Ruby VM in this process: nothing to trace";
    case MEMPROF_BUSY:
        return "memprof: busy: a thread is inside a memprof hook; continue a moment (e.g. 'finish') and retry";
    case MEMPROF_IN_GC:
        return "memprof: the Ruby GC is running; continue a moment (e.g. 'finish') and retry";
    case MEMPROF_HOOK_FAILED:
        return "memprof: could not hook the allocators (see the process's stderr)";
    case MEMPROF_NO_MEMORY:
        return "memprof: out of memory";
    case MEMPROF_IO_ERROR:
        return io_error_text[0] ? io_error_text : "memprof: cannot write the report";
    case MEMPROF_BAD_ARGUMENT:
        return "memprof: bad argument: site is nearest (0) or user (1), frames 1-64, sample 1 or more";
    default:
        return "memprof: unknown status";
    }
}

/* One line on stderr, from the strings given up to a NULL. */
__attribute__((sentinel)) static void say(const char *part, ...)
{
    struct out o;
    char buf[PATH_MAX + 256];
    out_init_fd(&o, STDERR_FILENO, buf, sizeof buf);
    va_list ap;
    va_start(ap, part);
    for (; part; part = va_arg(ap, const char *))
        out_str(&o, part);
    va_end(ap);
    out_char(&o, '\n');
    out_finish(&o);
}

static void report_at_exit(void);

EXPORT int memprof_start(void)
{
    enum ruby_status s = ruby_tracer_start(report_at_exit);
    if (s == RUBY_HOOK_FAILED)
        say("memprof: could not hook the allocators: ", got_error(), (char *)NULL);
    if (s == RUBY_OK)
        threads_start();
    return set_status(from_ruby(s));
}

EXPORT int memprof_stop(void)
{
    if (!ruby_tracer_available())
        return set_status(MEMPROF_NOT_RUBY);
    ruby_tracer_stop();
    return set_status(MEMPROF_OK);
}

EXPORT int memprof_reset(void)
{
    return set_status(from_ruby(ruby_tracer_reset()));
}

EXPORT int memprof_running(void)
{
    return ruby_tracer_running();
}

EXPORT int memprof_last_status(void)
{
    return last_status;
}

EXPORT int memprof_configure(int site, int frames, unsigned sample)
{
    struct ruby_config c = { .site = (enum ruby_site_mode)site, .frames = frames, .sample = sample };
    if (site != MEMPROF_SITE_NEAREST && site != MEMPROF_SITE_USER)
        return set_status(MEMPROF_BAD_ARGUMENT);
    return set_status(from_ruby(ruby_tracer_configure(&c)));
}

EXPORT unsigned memprof_epoch_begin(void)
{
    return ruby_tracer_new_epoch();
}

static struct ruby_report_options report_options(int flags, unsigned long top, unsigned since,
                                                 const char *filter)
{
    return (struct ruby_report_options){
        .sort = flags & MEMPROF_REPORT_SORT_BYTES ? RUBY_SORT_BYTES : RUBY_SORT_COUNT,
        .bytes = (flags & MEMPROF_REPORT_BYTES) != 0,
        .top = top, .since = since, .filter = filter,
    };
}

/* What a report holds: the Ruby table with its options, or the C heap's. */
struct report_request {
    bool heap;
    bool dump;          /* the Ruby objects as JSON lines */
    void (*write)(struct out *);   /* else a text of its own: the status, the threads */
    int flags;
    unsigned long top;
    unsigned since;
    const char *filter;
};

static int run_report(struct out *o, const struct report_request *r)
{
    if (r->write) {
        r->write(o);
        return MEMPROF_OK;
    }
    if (r->dump)
        return from_ruby(ruby_tracer_dump(o));
    if (r->heap)
        return from_heap(heap_tracer_report_as(o, r->top, (r->flags & MEMPROF_HEAP_BY_THREAD) != 0,
                                               r->flags & MEMPROF_HEAP_PPROF ? HEAP_FORMAT_PPROF : HEAP_FORMAT_TEXT));
    struct ruby_report_options opt = report_options(r->flags, r->top, r->since, r->filter);
    return from_ruby(ruby_tracer_report(o, &opt));
}

static int report_to_fd(int fd, const struct report_request *r)
{
    struct out o;
    char buf[8192];
    out_init_fd(&o, fd, buf, sizeof buf);
    int status = run_report(&o, r);
    int err = out_finish(&o);
    if (status == MEMPROF_OK && err) {
        struct out e;
        out_init_fd(&e, -1, io_error_text, sizeof io_error_text);
        out_str(&e, "memprof: cannot write the report: ");
        out_str(&e, strerror(err));
        out_finish(&e);
        status = MEMPROF_IO_ERROR;
    }
    return set_status(status);
}

/* The report as text owned by the runtime, valid until the next call. */
static const char *report_to_text(const struct report_request *r)
{
    out_release_mem(&report_text);
    out_init_mem(&report_text);
    int status = report_text.error ? MEMPROF_NO_MEMORY : run_report(&report_text, r);
    out_finish(&report_text);
    if (status == MEMPROF_OK && report_text.error)
        status = MEMPROF_NO_MEMORY;
    set_status(status);
    if (status != MEMPROF_OK || !report_text.buf)
        return memprof_strerror(status);
    return report_text.buf;
}

EXPORT int memprof_report_ex(int fd, int flags, unsigned long top, unsigned since,
                             const char *filter)
{
    return report_to_fd(fd, &(struct report_request){ .flags = flags, .top = top, .since = since, .filter = filter });
}

EXPORT int memprof_report(int fd)
{
    return memprof_report_ex(fd, 0, 0, 0, NULL);
}

EXPORT const char *memprof_report_text_ex(int flags, unsigned long top, unsigned since,
                                          const char *filter)
{
    return report_to_text(&(struct report_request){ .flags = flags, .top = top, .since = since, .filter = filter });
}

EXPORT const char *memprof_report_text(void)
{
    return memprof_report_text_ex(0, 0, 0, NULL);
}

EXPORT int memprof_hide_file(const char *file)
{
    if (!file)
        return set_status(MEMPROF_BAD_ARGUMENT);
    return set_status(ruby_tracer_hide_file(file) ? MEMPROF_OK : MEMPROF_NO_MEMORY);
}

/* Who made the Ruby object or the C heap block at `addr`. */
EXPORT const char *memprof_where(uintptr_t addr)
{
    static char text[8192];
    struct out o;
    bool found = false;
    int status = MEMPROF_OK;
    out_init_fd(&o, -1, text, sizeof text);
    if (ruby_tracer_available())
        status = from_ruby(ruby_tracer_where(&o, addr, &found));
    if (!found && status == MEMPROF_OK && heap_tracer_running()) {
        out_init_fd(&o, -1, text, sizeof text);
        status = from_heap(heap_tracer_where(&o, addr, &found));
        if (found && text[0] && o.len && text[o.len - 1] == '\n')
            o.len--;   /* GDB adds the line's end */
    } else if (status == MEMPROF_NOT_RUBY) {
        status = MEMPROF_OK;
    }
    out_finish(&o);
    set_status(status);
    if (status != MEMPROF_OK)
        return memprof_strerror(status);
    if (!found) {
        out_init_fd(&o, -1, text, sizeof text);
        out_str(&o, "memprof: no allocation recorded at ");
        out_hex(&o, addr);
        if (!ruby_tracer_running() && !heap_tracer_running())
            out_str(&o, " (no tracer is running: memprof-start, or MEMPROF_HEAP=1)");
        out_finish(&o);
    }
    return text;
}

EXPORT int memprof_heap_start(void)
{
    enum heap_status s = heap_tracer_start();
    if (s == HEAP_HOOK_FAILED)
        say("memprof: could not hook the heap functions: ", got_error(), (char *)NULL);
    const char *wrappers = heap_tracer_wrapper_problem();
    if (wrappers)
        say(wrappers, (char *)NULL);
    if (s == HEAP_OK)
        threads_start();
    return set_status(from_heap(s));
}

/* memprof_hook's message, and the text GDB's memprof-hook writes (GDB
 * passes no string to a call: that would call the target's malloc). */
static char hook_message[512];
EXPORT char memprof_gdb_text[MEMPROF_GDB_TEXT_SIZE];

EXPORT int memprof_hook(const char *spec)
{
    switch (heap_custom_hook(spec, hook_message, sizeof hook_message)) {
    case CUSTOM_OK:
        return set_status(MEMPROF_OK);
    case CUSTOM_BAD_SPEC:
        return set_status(MEMPROF_BAD_ARGUMENT);
    case CUSTOM_NO_MEMORY:
        return set_status(MEMPROF_NO_MEMORY);
    case CUSTOM_HOOK_FAILED:
    default:
        return set_status(MEMPROF_HOOK_FAILED);
    }
}

EXPORT int memprof_unhook(void)
{
    return set_status(heap_custom_unhook_all(hook_message, sizeof hook_message) == CUSTOM_OK ? MEMPROF_OK
                                                                                           : MEMPROF_HOOK_FAILED);
}

EXPORT int memprof_hook_gdb_text(void)
{
    memprof_gdb_text[sizeof memprof_gdb_text - 1] = '\0';
    return memprof_hook(memprof_gdb_text);
}

EXPORT int memprof_wrappers(const char *patterns)
{
    heap_tracer_set_wrappers(patterns);
    bool running = heap_tracer_running();
    if (running && !heap_tracer_rebuild_wrappers(hook_message, sizeof hook_message))
        return set_status(MEMPROF_BAD_ARGUMENT);
    struct out o;
    out_init_fd(&o, -1, hook_message, sizeof hook_message);
    if (!running) {
        out_str(&o, "memprof: wrappers '");
        out_str(&o, patterns);
        out_str(&o, "': looked through once the C heap is traced");
    } else if (*patterns) {
        out_str(&o, "memprof: allocations made in ");
        out_str(&o, patterns);
        out_str(&o, " are charged to their callers");
    } else {
        out_str(&o, "memprof: only the built-in allocation wrappers are looked through");
    }
    out_finish(&o);
    return set_status(MEMPROF_OK);
}

EXPORT int memprof_wrappers_gdb_text(void)
{
    memprof_gdb_text[sizeof memprof_gdb_text - 1] = '\0';
    return memprof_wrappers(memprof_gdb_text);
}

EXPORT const char *memprof_hook_message(void)
{
    return hook_message;
}

EXPORT int memprof_heap_stop(void)
{
    heap_tracer_stop();
    return set_status(MEMPROF_OK);
}

EXPORT int memprof_heap_report(int fd, unsigned long top)
{
    return report_to_fd(fd, &(struct report_request){ .heap = true, .top = top });
}

EXPORT const char *memprof_heap_report_text(unsigned long top)
{
    return report_to_text(&(struct report_request){ .heap = true, .top = top });
}

EXPORT int memprof_heap_report_ex(int fd, int flags, unsigned long top)
{
    return report_to_fd(fd, &(struct report_request){ .heap = true, .flags = flags, .top = top });
}

EXPORT const char *memprof_heap_report_text_ex(int flags, unsigned long top)
{
    return report_to_text(&(struct report_request){ .heap = true, .flags = flags, .top = top });
}

EXPORT int memprof_threads_start(void)
{
    if (!threads_start()) {
        say("memprof: could not hook pthread_create: ", got_error(), (char *)NULL);
        return set_status(MEMPROF_HOOK_FAILED);
    }
    return set_status(MEMPROF_OK);
}

EXPORT int memprof_threads_stop(void)
{
    threads_stop();
    return set_status(MEMPROF_OK);
}

EXPORT const char *memprof_threads_text(void)
{
    return report_to_text(&(struct report_request){ .write = threads_report });
}

EXPORT int memprof_attach(int what)
{
    if (what < MEMPROF_ATTACH_AUTO || what > MEMPROF_ATTACH_ALL)
        return set_status(MEMPROF_BAD_ARGUMENT);
    bool ruby = ruby_tracer_available();
    bool want_ruby = what == MEMPROF_ATTACH_RUBY || what == MEMPROF_ATTACH_ALL || (what == MEMPROF_ATTACH_AUTO && ruby);
    bool want_heap = what == MEMPROF_ATTACH_HEAP || what == MEMPROF_ATTACH_ALL || (what == MEMPROF_ATTACH_AUTO && !ruby);
    if (want_ruby && !ruby)
        return set_status(MEMPROF_NOT_RUBY);
    int status = MEMPROF_OK;
    if (want_ruby)
        status = memprof_start();
    if (status == MEMPROF_OK && want_heap)
        status = memprof_heap_start();
    if (status == MEMPROF_OK)
        status = memprof_threads_start();
    if (status == MEMPROF_OK) {
        struct out o;
        out_init_fd(&o, -1, hook_message, sizeof hook_message);
        out_str(&o, "memprof: attached to pid ");
        out_u64(&o, (uint64_t)getpid());
        out_str(&o, want_ruby && want_heap ? ": recording Ruby objects and the C heap"
                    : want_ruby            ? ": recording Ruby objects"
                                           : ": recording the C heap");
        out_str(&o, ", following threads");
        out_finish(&o);
    }
    return set_status(status);
}

EXPORT int memprof_detach(void)
{
    int status = MEMPROF_OK;
    if (ruby_tracer_available())
        ruby_tracer_detach();
    heap_tracer_stop();
    threads_stop();
    if (heap_custom_unhook_all(hook_message, sizeof hook_message) != CUSTOM_OK)
        status = MEMPROF_HOOK_FAILED;
    return set_status(status);
}

static void set_io_error(const char *path, int err);

static void write_status(struct out *o)
{
    out_str(o, "memprof ");
    out_str(o, PACKAGE_VERSION);
    out_str(o, ", runtime in pid ");
    out_u64(o, (uint64_t)getpid());
    out_char(o, '\n');
    unsigned long objects, ruby_bytes, blocks, heap_bytes, records, thread_bytes, stacks, stack_bytes;
    ruby_tracer_usage(&objects, &ruby_bytes);
    heap_tracer_usage(&blocks, &heap_bytes);
    threads_usage(&records, &thread_bytes);
    threads_stacks(&stacks, &stack_bytes);
    out_str(o, "  ruby:    ");
    out_str(o, !ruby_tracer_available() ? "no Ruby VM" : ruby_tracer_running() ? "recording" : "stopped");
    out_str(o, ", ");
    out_u64(o, objects);
    out_str(o, " objects tracked\n  heap:    ");
    out_str(o, heap_tracer_running() ? "recording" : "stopped");
    out_str(o, ", ");
    out_u64(o, blocks);
    out_str(o, " live blocks tracked\n  threads: ");
    out_str(o, threads_running() ? "following" : "not following");
    out_str(o, ", ");
    out_u64(o, records);
    out_str(o, " seen, ");
    out_u64(o, stacks);
    out_str(o, " live stacks of ");
    out_u64(o, stack_bytes / 1024);
    out_str(o, " KiB\n  hooks:   ");
    out_u64(o, got_patched_slot_count());
    out_str(o, " GOT slots patched, ");
    out_u64(o, pool_regions());
    out_str(o, " stub regions\n");
    if (heap_custom_describe(o) < 0)
        out_str(o, "  (memprof-hook is changing hooks right now)\n");
    out_str(o, "  memory:  ");
    out_u64(o, (ruby_bytes + heap_bytes + thread_bytes + 1023) / 1024);
    out_str(o, " KiB of tables (ruby ");
    out_u64(o, ruby_bytes / 1024);
    out_str(o, ", heap ");
    out_u64(o, heap_bytes / 1024);
    out_str(o, ", threads ");
    out_u64(o, thread_bytes / 1024);
    out_str(o, ")\n");
}

EXPORT const char *memprof_status_text(void)
{
    return report_to_text(&(struct report_request){ .write = write_status });
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

static void set_io_error(const char *path, int err)
{
    struct out e;
    out_init_fd(&e, -1, io_error_text, sizeof io_error_text);
    out_str(&e, "memprof: cannot write the report to ");
    out_str(&e, path);
    out_str(&e, ": ");
    out_str(&e, err == ELOOP ? "it is a symbolic link (refusing to follow it)" : strerror(err));
    out_finish(&e);
}

/* What `write` puts into `path`, whole or not at all (util/atomic_file.c). */
static int write_into(const char *path, int (*write)(int fd, const char *path, const void *ctx), const void *ctx)
{
    struct atomic_file f;
    int err = atomic_file_open(&f, path);
    if (err) {
        set_io_error(path, err);
        return set_status(MEMPROF_IO_ERROR);
    }
    int status = write(f.fd, path, ctx);
    if (status != MEMPROF_OK) {
        atomic_file_abort(&f);
        return set_status(status);
    }
    err = atomic_file_commit(&f);
    if (err) {
        set_io_error(path, err);
        return set_status(MEMPROF_IO_ERROR);
    }
    return set_status(MEMPROF_OK);
}

static int write_report(int fd, const char *path, const void *request)
{
    (void)path;
    return report_to_fd(fd, request);
}

static int report_into(const char *path, const struct report_request *r)
{
    return write_into(path, write_report, r);
}

/* Every report there is, one after the other. */
static int report_all_to_fd(int fd, const char *path, const void *unused)
{
    (void)unused;
    struct out o;
    char buf[8192];
    out_init_fd(&o, fd, buf, sizeof buf);
    write_status(&o);
    int status = MEMPROF_OK;
    if (ruby_tracer_available()) {
        out_str(&o, "\n== Ruby objects (count bytes file:line:Class) ==\n");
        status = run_report(&o, &(struct report_request){ .flags = MEMPROF_REPORT_BYTES | MEMPROF_REPORT_SORT_BYTES });
    }
    if (status == MEMPROF_OK && heap_tracer_running()) {
        out_str(&o, "\n== C heap ==\n");
        status = run_report(&o, &(struct report_request){ .heap = true });
    }
    if (status == MEMPROF_OK) {
        out_str(&o, "\n== threads ==\n");
        threads_report(&o);
    }
    int err = out_finish(&o);
    if (status == MEMPROF_OK && err) {
        set_io_error(path, err);
        status = MEMPROF_IO_ERROR;
    }
    return set_status(status);
}

EXPORT int memprof_dump_file(const char *path, int kind)
{
    if (!path || !*path || kind < MEMPROF_DUMP_AUTO || kind > MEMPROF_DUMP_REPORT)
        return set_status(MEMPROF_BAD_ARGUMENT);
    if (kind == MEMPROF_DUMP_AUTO)
        kind = ruby_tracer_available() ? MEMPROF_DUMP_RUBY
               : heap_tracer_running() ? MEMPROF_DUMP_HEAP : MEMPROF_DUMP_REPORT;
    if (kind == MEMPROF_DUMP_RUBY)
        return report_into(path, &(struct report_request){ .dump = true });
    if (kind == MEMPROF_DUMP_HEAP)
        return report_into(path, &(struct report_request){ .heap = true, .flags = MEMPROF_HEAP_PPROF });
    return write_into(path, report_all_to_fd, NULL);
}

EXPORT int memprof_dump_gdb_text(int kind)
{
    memprof_gdb_text[sizeof memprof_gdb_text - 1] = '\0';
    return memprof_dump_file(memprof_gdb_text, kind);
}

EXPORT int memprof_report_file(const char *path, int flags, unsigned long top, unsigned since,
                               const char *filter)
{
    if (!path || !*path)
        return set_status(MEMPROF_BAD_ARGUMENT);
    return report_into(path, &(struct report_request){ .flags = flags, .top = top, .since = since, .filter = filter });
}

EXPORT int memprof_heap_report_file(const char *path, int flags)
{
    if (!path || !*path)
        return set_status(MEMPROF_BAD_ARGUMENT);
    return report_into(path, &(struct report_request){ .heap = true, .flags = flags });
}

/* The exit report's options: MEMPROF_SORT, MEMPROF_TOP, MEMPROF_FILTER, MEMPROF_BYTES. */
static int exit_report_flags;
static unsigned long exit_report_top;

/* A report at exit, where `spec` (MEMPROF_OUTPUT, MEMPROF_HEAP_OUTPUT) says:
 * "none", "stderr" (after `header` and the pid, if given), or a file (%p: the
 * pid; expand_output_path) with `suffix` appended. */
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
        status = report_into(path, r);
    } else {
        say("memprof: cannot write the report to ", spec, ": ", strerror(ENAMETOOLONG), (char *)NULL);
        return;
    }
    if (status != MEMPROF_OK)
        say(memprof_strerror(status), (char *)NULL);
}

/* From a Ruby end proc: after the program's own at_exit handlers, while the
 * heap is still whole. */
static void report_at_exit(void)
{
    if (!ruby_tracer_running() || !report_at_exit_wanted)
        return;
    const char *spec = getenv("MEMPROF_OUTPUT");
    bool bytes = exit_report_flags & MEMPROF_REPORT_BYTES;
    report_at_exit_to(getenv("MEMPROF_DUMP"), "", &(struct report_request){ .dump = true }, NULL, NULL);
    report_at_exit_to(spec && *spec ? spec : "stderr", "",
                      &(struct report_request){ .flags = exit_report_flags, .top = exit_report_top,
                                                .filter = getenv("MEMPROF_FILTER") },
                      "== memprof: live Ruby objects at exit of pid ",
                      bytes ? " (count bytes file:line:Class) ==\n" : " (count file:line:Class) ==\n");
    ruby_tracer_stop();
}

static bool env_says_no(const char *name)
{
    const char *v = getenv(name);
    return v && (strcmp(v, "0") == 0 || strcmp(v, "no") == 0 || strcmp(v, "false") == 0);
}

/* Set, not empty, and not a "no". */
static bool env_says_yes(const char *name)
{
    const char *v = getenv(name);
    return v && *v && !env_says_no(name);
}

/* A whole decimal number in [min, max] from the environment; `fallback` when
 * unset, and a one-line complaint when malformed. */
static unsigned long env_number(const char *name, unsigned long min, unsigned long max,
                                unsigned long fallback)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return fallback;
    char *end;
    errno = 0;
    unsigned long n = strtoul(v, &end, 10);
    if (errno || *end || v[0] == '-' || n < min || n > max) {
        char range[64];
        struct out o;
        out_init_fd(&o, -1, range, sizeof range);
        out_u64(&o, min);
        out_str(&o, "-");
        out_u64(&o, max);
        out_finish(&o);
        say("memprof: ignoring ", name, "=", v, ": not a number in ", range, (char *)NULL);
        return fallback;
    }
    return n;
}

/* MEMPROF_SITE, MEMPROF_FRAMES, MEMPROF_SAMPLE and the exit report's options. */
static void configure_from_environment(void)
{
    struct ruby_config c;
    ruby_tracer_config(&c);
    const char *site = getenv("MEMPROF_SITE");
    if (site && *site) {
        if (strcmp(site, "nearest") == 0)
            c.site = RUBY_SITE_NEAREST;
        else if (strcmp(site, "user") == 0)
            c.site = RUBY_SITE_USER;
        else
            say("memprof: ignoring MEMPROF_SITE=", site, ": it is nearest or user", (char *)NULL);
    }
    c.frames = (int)env_number("MEMPROF_FRAMES", 1, 64, (unsigned long)c.frames);
    c.sample = (unsigned)env_number("MEMPROF_SAMPLE", 1, 1ul << 30, c.sample);
    ruby_tracer_configure(&c);

    const char *sort = getenv("MEMPROF_SORT");
    if (sort && strcmp(sort, "bytes") == 0)
        exit_report_flags |= MEMPROF_REPORT_SORT_BYTES | MEMPROF_REPORT_BYTES;
    else if (sort && *sort && strcmp(sort, "count") != 0)
        say("memprof: ignoring MEMPROF_SORT=", sort, ": it is count or bytes", (char *)NULL);
    if (env_says_yes("MEMPROF_BYTES"))
        exit_report_flags |= MEMPROF_REPORT_BYTES;
    exit_report_top = env_number("MEMPROF_TOP", 0, ~0ul, 0);
}

/* MEMPROF_HEAP_OUTPUT, from every process that traced its heap: at exit; in
 * a Ruby process at the end of the program, from the VM's end procs, before
 * its teardown frees what live objects hold (libxml2 documents, ...), and at
 * exit again, into SPEC.teardown, what teardown left: leaks. */
static bool heap_reported_at_end;

static void write_heap_reports(const char *suffix, bool with_pprof)
{
    int flags = env_says_yes("MEMPROF_HEAP_BY_THREAD") ? MEMPROF_HEAP_BY_THREAD : 0;
    report_at_exit_to(getenv("MEMPROF_HEAP_OUTPUT"), suffix,
                      &(struct report_request){ .heap = true, .flags = flags }, NULL, NULL);
    if (with_pprof)
        report_at_exit_to(getenv("MEMPROF_HEAP_PPROF"), suffix,
                          &(struct report_request){ .heap = true, .flags = MEMPROF_HEAP_PPROF }, NULL, NULL);
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

/* MEMPROF_HOOKS: memprof_hook specs separated by ';' (memprof run --hook). */
static void hooks_from_environment(void)
{
    const char *specs = getenv("MEMPROF_HOOKS");
    for (const char *at = specs; at && *at;) {
        const char *end = strchr(at, ';');
        size_t len = end ? (size_t)(end - at) : strlen(at);
        char spec[MEMPROF_GDB_TEXT_SIZE];
        if (len > 0 && len < sizeof spec) {
            memcpy(spec, at, len);
            spec[len] = '\0';
            if (memprof_hook(spec) != MEMPROF_OK)
                say(hook_message, (char *)NULL);
        }
        at = end ? end + 1 : NULL;
    }
}

static void memprof_init_inside(void);

/* memprof's own start-up (dlsym, atexit...) allocates: not the program's. */
__attribute__((constructor)) static void memprof_init(void)
{
    bool entered = reentry_enter();
    memprof_init_inside();
    if (entered)
        reentry_leave();
}

static void memprof_init_inside(void)
{
    /* The first profiled process of a tree owns the report paths. */
    unsigned long owner = env_number("MEMPROF_OWNER_PID", 1, INT_MAX, 0);
    owner_pid = owner ? (pid_t)owner : getpid();
    if (!owner) {
        char pid[24];
        struct out o;
        out_init_fd(&o, -1, pid, sizeof pid);
        out_u64(&o, (uint64_t)owner_pid);
        out_finish(&o);
        setenv("MEMPROF_OWNER_PID", pid, 1);
    }
    int heap_frames = (int)env_number("MEMPROF_HEAP_FRAMES", 1, 16, 1);
    heap_tracer_set_frames(heap_frames);
    heap_tracer_set_wrappers(getenv("MEMPROF_WRAPPERS"));
    /* "auto" (GDB's memprof.gdbinit): the C heap of a process without Ruby. */
    const char *heap = getenv("MEMPROF_HEAP");
    bool want_heap = env_says_yes("MEMPROF_HEAP") || (heap && strcmp(heap, "auto") == 0 && !ruby_tracer_available());
    if (want_heap && memprof_heap_start() == MEMPROF_OK) {
        if (heap_frames > 1 && !heap_tracer_has_backtraces())
            say("memprof: backtraces need libunwind (the Debian package libunwind8): "
                "recording call sites only", (char *)NULL);
        heap_ruby_at_program_end(heap_report_at_program_end);
        atexit(heap_report_at_exit);
        hooks_from_environment();
    }
    if (env_says_yes("MEMPROF_THREADS"))
        memprof_threads_start();
    if (!ruby_tracer_available())
        return;
    configure_from_environment();
    const char *output = getenv("MEMPROF_OUTPUT");
    report_at_exit_wanted = output && *output;
    /* Loaded into a VM already running (require 'memprof', GDB): recording
     * waits for memprof_start(). Loaded before it (LD_PRELOAD): start now. */
    if (env_says_no("MEMPROF_START") || ruby_tracer_vm_running())
        return;
    report_at_exit_wanted = true;
    memprof_start();
}
