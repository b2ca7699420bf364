/* The C API of memprof.h: each call does its work through the tracers and
 * ends with call_done (text.c). */
#include "runtime.h"
#include "../memprof_debugger.h"
#include "../hook/got.h"
#include "../trace/heap/heap.h"
#include "../trace/heap/heap_custom.h"
#include "../trace/ruby/ruby.h"
#include "../trace/threads.h"

/* A string GDB wrote into memprof_gdb_text (memprof_debugger.h) ends within
 * the buffer, whatever GDB wrote. */
static void seal_if_gdb_text(const char *text)
{
    if (text == memprof_gdb_text)
        memprof_gdb_text[sizeof memprof_gdb_text - 1] = '\0';
}

int tracers_start(int tracers)
{
    int status = MEMPROF_OK;
    if (tracers & MEMPROF_RUBY) {
        status = ruby_tracer_start(ruby_report_at_exit);
        if (status == MEMPROF_HOOK_FAILED)
            say("memprof: could not hook the allocators: ", got_error(), (char *)NULL);
    }
    if (status == MEMPROF_OK && (tracers & MEMPROF_HEAP)) {
        status = heap_tracer_start();
        if (status == MEMPROF_HOOK_FAILED)
            say("memprof: could not hook the heap functions: ", got_error(), (char *)NULL);
        const char *wrappers = heap_tracer_wrapper_problem();
        if (wrappers)
            say(wrappers, (char *)NULL);
    }
    /* Following threads is a tracer's bonus: only a request for it fails. */
    if (status == MEMPROF_OK && tracers && !threads_start() && (tracers & MEMPROF_THREADS)) {
        say("memprof: could not hook pthread_create: ", got_error(), (char *)NULL);
        status = MEMPROF_HOOK_FAILED;
    }
    return status;
}

EXPORT int memprof_start(int tracers)
{
    if (tracers <= 0 || tracers > (MEMPROF_RUBY | MEMPROF_HEAP | MEMPROF_THREADS))
        return call_done(MEMPROF_BAD_ARGUMENT, NULL);
    return call_done(tracers_start(tracers), NULL);
}

EXPORT int memprof_stop(int tracers)
{
    if (tracers <= 0 || tracers > (MEMPROF_RUBY | MEMPROF_HEAP | MEMPROF_THREADS))
        return call_done(MEMPROF_BAD_ARGUMENT, NULL);
    if ((tracers & MEMPROF_RUBY) && !ruby_tracer_available())
        return call_done(MEMPROF_NOT_RUBY, NULL);
    if (tracers & MEMPROF_RUBY)
        ruby_tracer_stop();
    if (tracers & MEMPROF_HEAP)
        heap_tracer_stop();
    if (tracers & MEMPROF_THREADS)
        threads_stop();
    return call_done(MEMPROF_OK, NULL);
}

EXPORT int memprof_running(void)
{
    return (ruby_tracer_running() ? MEMPROF_RUBY : 0) | (heap_tracer_running() ? MEMPROF_HEAP : 0) |
           (threads_running() ? MEMPROF_THREADS : 0);
}

EXPORT int memprof_reset(void)
{
    return call_done(ruby_tracer_reset(), NULL);
}

EXPORT int memprof_configure(int site, int frames, unsigned sample)
{
    struct ruby_config c = { .site = (enum ruby_site_mode)site, .frames = frames, .sample = sample };
    if (site != MEMPROF_SITE_NEAREST && site != MEMPROF_SITE_USER)
        return call_done(MEMPROF_BAD_ARGUMENT, NULL);
    return call_done(ruby_tracer_configure(&c), NULL);
}

EXPORT unsigned memprof_epoch_begin(void)
{
    return ruby_tracer_new_epoch();
}

EXPORT int memprof_hide_file(const char *file)
{
    if (!file)
        return call_done(MEMPROF_BAD_ARGUMENT, NULL);
    return call_done(ruby_tracer_hide_file(file) ? MEMPROF_OK : MEMPROF_NO_MEMORY, NULL);
}

EXPORT int memprof_report(int kind, int flags, unsigned long top, unsigned since, const char *filter,
                          const char *path)
{
    if (kind < MEMPROF_REPORT_AUTO || kind > MEMPROF_REPORT_HEAP_PEAK || (path && !*path))
        return call_done(MEMPROF_BAD_ARGUMENT, NULL);
    seal_if_gdb_text(path);
    struct report_request r = { .kind = kind, .flags = flags, .top = top, .since = since, .filter = filter };
    return path ? report_to_file(path, &r) : report_to_text(&r);
}

EXPORT int memprof_report_soon(int kind, int flags, const char *path)
{
    if (kind < MEMPROF_REPORT_AUTO || kind > MEMPROF_REPORT_HEAP_PEAK || !path || !*path)
        return call_done(MEMPROF_BAD_ARGUMENT, NULL);
    seal_if_gdb_text(path);
    return report_soon(kind, flags, path);
}

EXPORT int memprof_report_soon_state(int take_back)
{
    return report_soon_state(take_back != 0);
}

/* Who made the Ruby object or the C heap block at `addr`. */
EXPORT int memprof_where(uintptr_t addr)
{
    struct out o;
    bool found = false;
    int status = MEMPROF_OK;
    message_begin(&o);
    if (ruby_tracer_available())
        status = ruby_tracer_where(&o, addr, &found);
    if (!found && status == MEMPROF_OK && heap_tracer_running()) {
        message_begin(&o);
        status = heap_tracer_where(&o, addr, &found);
        if (found && o.len && o.buf[o.len - 1] == '\n')
            o.len--;   /* GDB adds the line's end */
    } else if (status == MEMPROF_NOT_RUBY) {
        status = MEMPROF_OK;
    }
    out_finish(&o);
    if (status != MEMPROF_OK)
        return call_done(status, status_line(status));
    if (!found) {
        message_begin(&o);
        out_str(&o, "memprof: no allocation recorded at ");
        out_hex(&o, addr);
        if (!ruby_tracer_running() && !heap_tracer_running())
            out_str(&o, " (no tracer is running: memprof-start, or MEMPROF_HEAP=1)");
        out_finish(&o);
    }
    return call_done(MEMPROF_OK, NULL);
}

EXPORT int memprof_hook(const char *spec)
{
    seal_if_gdb_text(spec);
    size_t size;
    char *message = message_buffer(&size);
    return call_done(heap_custom_hook(spec, message, size), NULL);
}

EXPORT int memprof_unhook(void)
{
    size_t size;
    char *message = message_buffer(&size);
    return call_done(heap_custom_unhook_all(message, size) == MEMPROF_OK ? MEMPROF_OK : MEMPROF_HOOK_FAILED, NULL);
}

EXPORT int memprof_sample_bytes(unsigned long bytes)
{
    if (bytes > HEAP_SAMPLE_MAX)
        return call_done(MEMPROF_BAD_ARGUMENT, "memprof: the sampling interval is at most 2^40 bytes");
    if (!heap_tracer_set_sample(bytes, 0))
        return call_done(MEMPROF_BAD_ARGUMENT, "memprof: the C heap was recorded with another sampling "
                                               "interval: it is set before the heap tracer first records");
    return call_done(MEMPROF_OK, NULL);
}

EXPORT int memprof_wrappers(const char *patterns)
{
    if (!patterns)
        return call_done(MEMPROF_BAD_ARGUMENT, NULL);
    seal_if_gdb_text(patterns);
    heap_tracer_set_wrappers(patterns);
    bool running = heap_tracer_running();
    size_t size;
    char *message = message_buffer(&size);
    if (running && !heap_tracer_rebuild_wrappers(message, size))
        return call_done(MEMPROF_BAD_ARGUMENT, NULL);
    struct out o;
    message_begin(&o);
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
    return call_done(MEMPROF_OK, NULL);
}

EXPORT unsigned long memprof_usage(int kind)
{
    unsigned long objects, bytes;
    ruby_tracer_usage(&objects, &bytes);
    return kind == MEMPROF_TABLE_BYTES ? bytes : kind == MEMPROF_TRACKED_OBJECTS ? objects : 0;
}

EXPORT const char *memprof_version(void)
{
    return PACKAGE_VERSION;
}
