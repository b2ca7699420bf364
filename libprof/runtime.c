/* libmemprof.so: loaded by LD_PRELOAD (memprof run, GDB's `run`) or by dlopen.
 * It stays inert in processes without a Ruby VM: children such as sh or make
 * inherit LD_PRELOAD and must behave exactly as without it. */
#include "memprof.h"
#include "hook/got.h"
#include "trace/ruby.h"
#include "util/atomic_file.h"
#include "util/out.h"
#include "util/pages.h"
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

static int last_status;
static struct out report_text;
static pid_t started_by;
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
    if (s == RUBY_OK && !started_by)
        started_by = getpid();
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

EXPORT int memprof_report(int fd)
{
    struct out o;
    char buf[8192];
    out_init_fd(&o, fd, buf, sizeof buf);
    int status = from_ruby(ruby_tracer_report(&o));
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

EXPORT const char *memprof_report_text(void)
{
    out_release_mem(&report_text);
    out_init_mem(&report_text);
    int status = report_text.error ? MEMPROF_NO_MEMORY : from_ruby(ruby_tracer_report(&report_text));
    out_finish(&report_text);
    if (status == MEMPROF_OK && report_text.error)
        status = MEMPROF_NO_MEMORY;
    set_status(status);
    if (status != MEMPROF_OK || !report_text.buf)
        return memprof_strerror(status);
    return report_text.buf;
}

/* MEMPROF_OUTPUT with each %p replaced by the pid; false if it does not fit. */
static bool expand_output_path(const char *spec, char *path, size_t size)
{
    struct out o;
    out_init_fd(&o, -1, path, size);
    for (const char *p = spec; *p; p++) {
        if (p[0] == '%' && p[1] == 'p') {
            out_u64(&o, (uint64_t)getpid());
            p++;
        } else {
            out_char(&o, *p);
        }
    }
    return out_finish(&o) == 0;
}

static void report_to_file(const char *spec)
{
    char path[PATH_MAX];
    struct atomic_file f;
    int err = expand_output_path(spec, path, sizeof path) ? atomic_file_open(&f, path) : ENAMETOOLONG;
    if (!err) {
        int status = memprof_report(f.fd);
        if (status == MEMPROF_OK)
            err = atomic_file_commit(&f);
        else {
            atomic_file_abort(&f);
            say(memprof_strerror(status), (char *)NULL);
            return;
        }
    }
    if (err)
        say("memprof: cannot write the report to ", path, ": ",
            err == ELOOP ? "it is a symbolic link (refusing to follow it)" : strerror(err), (char *)NULL);
}

/* From a Ruby end proc: after the program's own at_exit handlers, while the
 * heap is still whole. A forked child reports only if the path has %p. */
static void report_at_exit(void)
{
    if (!ruby_tracer_running())
        return;
    const char *spec = getenv("MEMPROF_OUTPUT");
    if (!spec || !*spec)
        spec = "stderr";
    if (strcmp(spec, "none") == 0)
        return;
    if (getpid() != started_by && !strstr(spec, "%p"))
        return;
    if (strcmp(spec, "stderr") == 0) {
        struct out o;
        char buf[128];
        out_init_fd(&o, STDERR_FILENO, buf, sizeof buf);
        out_str(&o, "== memprof: live Ruby objects at exit of pid ");
        out_u64(&o, (uint64_t)getpid());
        out_str(&o, " (count file:line:Class) ==\n");
        out_finish(&o);
        int status = memprof_report(STDERR_FILENO);
        if (status != MEMPROF_OK)
            say(memprof_strerror(status), (char *)NULL);
    } else {
        report_to_file(spec);
    }
    ruby_tracer_stop();
}

static bool env_says_no(const char *name)
{
    const char *v = getenv(name);
    return v && (strcmp(v, "0") == 0 || strcmp(v, "no") == 0 || strcmp(v, "false") == 0);
}

__attribute__((constructor)) static void memprof_init(void)
{
    if (env_says_no("MEMPROF_START") || !ruby_tracer_available())
        return;
    memprof_start();
}
