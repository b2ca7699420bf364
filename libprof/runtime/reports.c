/* Every report the runtime writes, by kind, into a descriptor, a file (whole
 * or not at all) or text the runtime owns. */
#include "runtime.h"
#include "../memprof_debugger.h"
#include "../hook/got.h"
#include "../hook/pool.h"
#include "../trace/heap/heap.h"
#include "../trace/heap/heap_custom.h"
#include "../trace/heap/heap_peak.h"
#include "../trace/ruby/ruby.h"
#include "../trace/threads.h"
#include "../util/atomic_file.h"
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct out report_text;

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

/* The snapshot at the peak, copied out first: the file written after, with
 * the snapshots free to go on. */
static int write_heap_peak(struct out *o)
{
    heap_peak_settle();
    struct out copy;
    out_init_mem(&copy);
    bool have;
    int status = copy.error ? MEMPROF_NO_MEMORY : heap_peak_write(&copy, &have);
    if (status == MEMPROF_OK && copy.error)
        status = MEMPROF_NO_MEMORY;
    if (status == MEMPROF_OK && have)
        out_bytes(o, copy.buf, copy.len);
    out_release_mem(&copy);
    struct out m;
    if (status == MEMPROF_BAD_ARGUMENT) {
        message_begin(&m);
        out_str(&m, "memprof: the C heap's peak is not followed in this process: set MEMPROF_PEAK=1 before it starts");
        out_finish(&m);
    } else if (status == MEMPROF_OK && !have) {
        /* Every snapshot so far met another report. */
        status = MEMPROF_BUSY;
    }
    return status;
}

static enum memprof_report_kind resolve_auto(enum memprof_report_kind kind)
{
    if (kind != MEMPROF_REPORT_AUTO)
        return kind;
    return ruby_tracer_available() ? MEMPROF_REPORT_RUBY_JSON
           : heap_tracer_running() ? MEMPROF_REPORT_HEAP_PPROF : MEMPROF_REPORT_ALL;
}

/* The GC a report of live Ruby objects asks for (MEMPROF_REPORT_GC), run
 * once before any table is read. */
static enum ruby_gc_state collect_for(const struct report_request *r, enum memprof_report_kind kind)
{
    if (r->gc != RUBY_GC_NOT_ASKED || !(r->flags & MEMPROF_REPORT_GC) ||
        (kind != MEMPROF_REPORT_RUBY && kind != MEMPROF_REPORT_RUBY_JSON && kind != MEMPROF_REPORT_ALL) ||
        !ruby_tracer_available())
        return r->gc;
    return ruby_tracer_collect();
}

static int run_report(struct out *o, const struct report_request *r)
{
    enum memprof_report_kind kind = resolve_auto(r->kind);
    enum ruby_gc_state gc = collect_for(r, kind);
    switch (kind) {
    case MEMPROF_REPORT_RUBY: {
        struct ruby_report_options opt = {
            .sort = r->flags & MEMPROF_REPORT_SORT_ALLOCATED ? RUBY_SORT_ALLOCATED
                    : r->flags & MEMPROF_REPORT_SORT_BYTES   ? RUBY_SORT_BYTES
                                                             : RUBY_SORT_COUNT,
            .bytes = (r->flags & MEMPROF_REPORT_BYTES) != 0,
            .allocated = (r->flags & (MEMPROF_REPORT_ALLOCATED | MEMPROF_REPORT_SORT_ALLOCATED)) != 0,
            .gc = gc, .when = r->when, .top = r->top, .since = r->since, .filter = r->filter,
            .strings = (r->flags & MEMPROF_REPORT_STRINGS) != 0,
            .unsorted = (r->flags & MEMPROF_REPORT_UNSORTED) != 0,
        };
        return ruby_tracer_report(o, &opt);
    }
    case MEMPROF_REPORT_HEAP:
    case MEMPROF_REPORT_HEAP_PPROF:
        return heap_tracer_report_as(o, r->top, (r->flags & MEMPROF_REPORT_BY_THREAD) != 0,
                                     r->kind == MEMPROF_REPORT_HEAP_PPROF          ? HEAP_FORMAT_PPROF
                                     : r->flags & MEMPROF_REPORT_FREED_SITES ? HEAP_FORMAT_TEXT_ALL
                                                                             : HEAP_FORMAT_TEXT);
    case MEMPROF_REPORT_HEAP_PEAK:
        return write_heap_peak(o);
    case MEMPROF_REPORT_RUBY_JSON:
        return ruby_tracer_dump(o);
    case MEMPROF_REPORT_THREADS:
        threads_report(o);
        return MEMPROF_OK;
    case MEMPROF_REPORT_STATUS:
        write_status(o);
        return MEMPROF_OK;
    case MEMPROF_REPORT_ALL: {
        write_status(o);
        int status = MEMPROF_OK;
        if (ruby_tracer_available()) {
            out_char(o, '\n');
            status = run_report(o, &(struct report_request){ .kind = MEMPROF_REPORT_RUBY, .gc = gc,
                                                              .flags = MEMPROF_REPORT_BYTES | MEMPROF_REPORT_SORT_BYTES });
        }
        if (status == MEMPROF_OK && heap_tracer_running()) {
            out_str(o, "\n== C heap ==\n");
            status = run_report(o, &(struct report_request){ .kind = MEMPROF_REPORT_HEAP });
        }
        if (status == MEMPROF_OK) {
            out_str(o, "\n== threads ==\n");
            threads_report(o);
        }
        return status;
    }
    case MEMPROF_REPORT_AUTO:
        break;
    }
    return MEMPROF_BAD_ARGUMENT;
}

/* "memprof: cannot write the report[ to PATH]: WHY" as the call's message. */
static int io_error(const char *path, int err)
{
    struct out m;
    message_begin(&m);
    out_str(&m, "memprof: cannot write the report");
    if (path) {
        out_str(&m, " to ");
        out_str(&m, path);
    }
    out_str(&m, ": ");
    out_str(&m, err == ELOOP ? "it is a symbolic link (refusing to follow it)" : strerror(err));
    out_finish(&m);
    return MEMPROF_IO_ERROR;
}

/* The request with the GC it asks for run now, from the caller's small
 * frame (report_to_file's and the others' own): Ruby's GC scans the machine
 * stack conservatively, and a stale copy of a dead object's address in the
 * storage a report has yet to fill (its 8 KiB buffer, a file's two paths)
 * would keep the object. */
static __attribute__((noinline)) struct report_request collected(const struct report_request *r)
{
    struct report_request c = *r;
    c.gc = (int)collect_for(r, resolve_auto(r->kind));
    return c;
}

/* The report into `fd`: its status, and in *err the write's errno (0). */
static __attribute__((noinline)) int write_report(int fd, const struct report_request *r, int *err)
{
    struct out o;
    char buf[8192];
    out_init_fd(&o, fd, buf, sizeof buf);
    if (r->preface)
        out_str(&o, r->preface);
    int status = run_report(&o, r);
    if (status == MEMPROF_OK && r->trailer)
        out_str(&o, r->trailer);
    *err = out_finish(&o);
    return status;
}

static int write_to_fd(int fd, const char *path, const struct report_request *r)
{
    int err, status = write_report(fd, r, &err);
    return status == MEMPROF_OK && err ? io_error(path, err) : status;
}

int report_to_fd(int fd, const struct report_request *r)
{
    struct report_request c = collected(r);
    return call_done(write_to_fd(fd, NULL, &c), NULL);
}

int report_write_quietly(int fd, const struct report_request *r)
{
    struct report_request c = collected(r);
    int err, status = write_report(fd, &c, &err);
    return status == MEMPROF_OK && err ? MEMPROF_IO_ERROR : status;
}

bool report_path_is_scratch(const char *path)
{
    const char *prefix = env_get("MEMPROF_SCRATCH");
    return prefix && *prefix && strncmp(path, prefix, strlen(prefix)) == 0;
}

/* Whole or not at all (util/atomic_file.c). */
static __attribute__((noinline)) int file_report(const char *path, const struct report_request *r)
{
    struct atomic_file f;
    int err = atomic_file_open(&f, path);
    if (err)
        return call_done(io_error(path, err), NULL);
    f.scratch = r->scratch || report_path_is_scratch(path);
    int status = write_to_fd(f.fd, path, r);
    if (status != MEMPROF_OK) {
        atomic_file_abort(&f);
        return call_done(status, NULL);
    }
    err = atomic_file_commit(&f);
    return call_done(err ? io_error(path, err) : MEMPROF_OK, NULL);
}

int report_to_file(const char *path, const struct report_request *r)
{
    struct report_request c = collected(r);
    return file_report(path, &c);
}

int report_to_text(const struct report_request *r)
{
    struct report_request c = collected(r);
    out_release_mem(&report_text);
    out_init_mem(&report_text);
    int status = report_text.error ? MEMPROF_NO_MEMORY : run_report(&report_text, &c);
    out_finish(&report_text);
    if (status == MEMPROF_OK && report_text.error)
        status = MEMPROF_NO_MEMORY;
    return call_done(status, status == MEMPROF_OK ? report_text.buf : NULL);
}

/* --- a report at the VM's next safe point (memprof attach's GC) ------------ */

static int soon_state;   /* enum memprof_soon_state */
static struct {
    int kind, flags;
    char path[PATH_MAX];
} soon;

static void write_soon(void *unused)
{
    (void)unused;
    int queued = MEMPROF_SOON_QUEUED;
    if (!__atomic_compare_exchange_n(&soon_state, &queued, MEMPROF_SOON_WRITING, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return;   /* taken back: the report was read without it */
    /* Not synced: an fsync stalls for seconds on a busy disk, and this job
     * holds the GVL (a server's requests wait); memprof attach reads it at once. */
    int status = report_to_file(soon.path, &(struct report_request){ .kind = soon.kind, .flags = soon.flags,
                                                                      .scratch = true });
    __atomic_store_n(&soon_state, status == MEMPROF_OK ? MEMPROF_SOON_WRITTEN : MEMPROF_SOON_FAILED,
                     __ATOMIC_RELEASE);
}

/* The status only: report_soon says why, serve.c's thread (no API call) does not. */
static int queue_soon(int kind, int flags, const char *path, bool from_outside)
{
    if (strlen(path) >= sizeof soon.path)
        return MEMPROF_BAD_ARGUMENT;
    int state = __atomic_load_n(&soon_state, __ATOMIC_ACQUIRE);
    if (state == MEMPROF_SOON_QUEUED || state == MEMPROF_SOON_WRITING)
        return MEMPROF_BUSY;
    soon.kind = kind;
    soon.flags = flags;
    memcpy(soon.path, path, strlen(path) + 1);
    __atomic_store_n(&soon_state, MEMPROF_SOON_QUEUED, __ATOMIC_RELEASE);
    if (from_outside ? ruby_tracer_postpone_from_outside(write_soon, NULL) : ruby_tracer_postpone(write_soon, NULL, true))
        return MEMPROF_OK;
    __atomic_store_n(&soon_state, MEMPROF_SOON_NONE, __ATOMIC_RELEASE);
    return MEMPROF_NOT_RUBY;
}

int report_soon(int kind, int flags, const char *path)
{
    int status = queue_soon(kind, flags, path, false);
    switch (status) {
    case MEMPROF_BAD_ARGUMENT:
        return call_done(status, "memprof: the report's path is too long");
    case MEMPROF_BUSY:
        return call_done(status, "memprof: a report asked for at a safe point is not written yet");
    case MEMPROF_NOT_RUBY:
        return call_done(status, ruby_tracer_vm_running()
                                     ? "memprof: this thread is not one of the Ruby VM's: select one to ask"
                                     : "memprof: no Ruby VM runs in this process");
    }
    return call_done(status, NULL);
}

int report_soon_from_outside(int kind, int flags, const char *path)
{
    return queue_soon(kind, flags, path, true);
}

void report_soon_ask_again(void)
{
    if (__atomic_load_n(&soon_state, __ATOMIC_ACQUIRE) == MEMPROF_SOON_QUEUED)
        ruby_tracer_postpone_from_outside(write_soon, NULL);
}

int report_soon_state(bool take_back)
{
    int queued = MEMPROF_SOON_QUEUED;
    if (take_back && __atomic_compare_exchange_n(&soon_state, &queued, MEMPROF_SOON_NONE, false, __ATOMIC_ACQ_REL,
                                                 __ATOMIC_ACQUIRE))
        return MEMPROF_SOON_QUEUED;
    return __atomic_load_n(&soon_state, __ATOMIC_ACQUIRE);
}
