/* libmemprof.so's start-up: loaded by LD_PRELOAD (memprof run, GDB's `run`)
 * or by dlopen, it does what the environment says. It stays inert in
 * processes without a Ruby VM unless told otherwise: children such as sh or
 * make inherit LD_PRELOAD and must behave exactly as without it. */
#include "runtime.h"
#include "../memprof_debugger.h"
#include "../trace/heap/heap.h"
#include "../trace/ruby/ruby.h"
#include "../util/fault.h"
#include "../util/reentry.h"
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* A whole decimal number in [min, max] from the environment; `fallback` when
 * unset, and a one-line complaint when malformed. */
static unsigned long env_number(const char *name, unsigned long min, unsigned long max,
                                unsigned long fallback)
{
    const char *v = env_get(name);
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

/* MEMPROF_SITE, MEMPROF_FRAMES, MEMPROF_SAMPLE and the exit report's options
 * (MEMPROF_SORT, MEMPROF_BYTES, MEMPROF_ALLOCATED, MEMPROF_NO_GC, MEMPROF_TOP;
 * MEMPROF_FILTER is used at exit). */
static void configure_ruby_from_environment(bool report_at_exit)
{
    struct ruby_config c;
    ruby_tracer_config(&c);
    const char *site = env_get("MEMPROF_SITE");
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

    /* What a full GC retains, unless MEMPROF_NO_GC. */
    int flags = env_says_yes("MEMPROF_NO_GC") ? 0 : MEMPROF_REPORT_GC;
    const char *sort = env_get("MEMPROF_SORT");
    if (sort && strcmp(sort, "bytes") == 0)
        flags |= MEMPROF_REPORT_SORT_BYTES | MEMPROF_REPORT_BYTES;
    else if (sort && strcmp(sort, "allocated") == 0)
        flags |= MEMPROF_REPORT_SORT_ALLOCATED | MEMPROF_REPORT_ALLOCATED;
    else if (sort && *sort && strcmp(sort, "count") != 0 && strcmp(sort, "retained") != 0)
        say("memprof: ignoring MEMPROF_SORT=", sort, ": it is count (or retained), bytes or allocated",
            (char *)NULL);
    if (env_says_yes("MEMPROF_BYTES"))
        flags |= MEMPROF_REPORT_BYTES;
    if (env_says_yes("MEMPROF_ALLOCATED"))
        flags |= MEMPROF_REPORT_ALLOCATED;
    exit_reports_want_ruby(report_at_exit, flags, env_number("MEMPROF_TOP", 0, ~0ul, 0));
}

/* MEMPROF_HOOKS: memprof_hook specs separated by ';' (memprof run --hook). */
static void hooks_from_environment(void)
{
    const char *specs = env_get("MEMPROF_HOOKS");
    for (const char *at = specs; at && *at;) {
        const char *end = strchr(at, ';');
        size_t len = end ? (size_t)(end - at) : strlen(at);
        char spec[MEMPROF_GDB_TEXT_SIZE];
        if (len > 0 && len < sizeof spec) {
            memcpy(spec, at, len);
            spec[len] = '\0';
            if (memprof_hook(spec) != MEMPROF_OK)
                say(memprof_text(), (char *)NULL);
        }
        at = end ? end + 1 : NULL;
    }
}

static void start_from_environment(void)
{
    exit_reports_init(env_number("MEMPROF_OWNER_PID", 1, INT_MAX, 0),
                      env_number("MEMPROF_OWNER_PARENT", 1, INT_MAX, 0));
    int heap_frames = (int)env_number("MEMPROF_HEAP_FRAMES", 1, 16, 1);
    heap_tracer_set_frames(heap_frames);
    heap_tracer_set_sample(env_number("MEMPROF_SAMPLE_BYTES", 0, HEAP_SAMPLE_MAX, 0),
                           env_number("MEMPROF_SAMPLE_SEED", 0, ~0ul, 0));
    heap_tracer_set_wrappers(env_get("MEMPROF_WRAPPERS"));
    /* "auto" (GDB's memprof.gdbinit): the C heap of a process without Ruby. */
    const char *heap = env_get("MEMPROF_HEAP");
    bool want_heap = env_says_yes("MEMPROF_HEAP") || (heap && strcmp(heap, "auto") == 0 && !ruby_tracer_available());
    if (want_heap && tracers_start(MEMPROF_HEAP) == MEMPROF_OK) {
        if (heap_frames > 1 && !heap_tracer_has_backtraces())
            say("memprof: backtraces need libunwind (the Debian package libunwind8): "
                "recording call sites only", (char *)NULL);
        exit_reports_want_heap(env_says_yes("MEMPROF_HEAP_AT_PEAK"));
        hooks_from_environment();
        peak_reports_init(env_number("MEMPROF_PEAK_STEP", 1, 1000, 10));
        timeline_init(env_number("MEMPROF_TIMELINE_INTERVAL", 1, 60000, 10));
    }
    if (env_says_yes("MEMPROF_THREADS"))
        tracers_start(MEMPROF_THREADS);
    signal_reports_init();
    serve_init();
    if (!ruby_tracer_available()) {
        fault_guard_install();
        return;
    }
    /* Loaded into a VM already running (require 'memprof', GDB): recording
     * waits for memprof_start, and reports at exit if MEMPROF_OUTPUT says.
     * Loaded before it (LD_PRELOAD): start now, and report at exit. */
    const char *output = env_get("MEMPROF_OUTPUT");
    bool waits = env_says_no("MEMPROF_START") || ruby_tracer_vm_running();
    configure_ruby_from_environment(!waits || (output && *output));
    if (!waits)
        tracers_start(MEMPROF_RUBY);
}

/* memprof's own start-up (dlsym, atexit...) allocates: not the program's. */
__attribute__((constructor)) static void memprof_init(void)
{
    bool entered = reentry_enter();
    environment_capture();
    start_from_environment();
    if (entered)
        reentry_leave();
}
