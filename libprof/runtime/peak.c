/* The report at the C heap's peak (MEMPROF_PEAK_REPORT=FILE): a process the
 * OOM killer ends, with no core and no exit, still leaves where its memory
 * went. A thread of memprof's own reads the live total now and then (the
 * report's exact reading without its rows; no hook waits for it) and
 * rewrites FILE, whole, each time live bytes pass those of the report on
 * disk by MEMPROF_PEAK_STEP percent. */
#include "runtime.h"
#include "../trace/heap.h"
#include "../util/reentry.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MIN_INTERVAL_NS 100000000ull   /* 100 ms */

static unsigned long step_percent = 10;
static uint64_t start_ns;
/* MEMPROF_PEAK_REPORT, read once at start-up: the watcher must not call
 * getenv while the program may be calling setenv. */
static char spec[4096];

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void *watch(void *unused)
{
    (void)unused;
    reentry_enter();   /* whatever this thread does is memprof's: never recorded */
    uint64_t interval = MIN_INTERVAL_NS, reported = 0;
    bool any = false;
    for (;;) {
        nanosleep(&(struct timespec){ (time_t)(interval / 1000000000ull), (long)(interval % 1000000000ull) },
                  NULL);
        if (!heap_tracer_running())
            continue;
        uint64_t began = now_ns(), bytes;
        size_t blocks;
        if (heap_tracer_live(&bytes, &blocks) != MEMPROF_OK)
            continue;   /* a report or a hook has the tables: next time */
        /* At most about 5% of a core: wait 20 times what a reading took. */
        uint64_t spent = now_ns() - began;
        interval = spent * 20 > MIN_INTERVAL_NS ? spent * 20 : MIN_INTERVAL_NS;
        if (any && bytes <= reported + reported / 100 * step_percent)
            continue;
        if (!bytes)
            continue;
        char preface[160];
        struct out p;
        out_init_fd(&p, -1, preface, sizeof preface);
        out_str(&p, "# peak ");
        out_u64(&p, bytes);
        out_str(&p, " bytes in ");
        out_u64(&p, blocks);
        out_str(&p, " blocks, ");
        out_u64(&p, (now_ns() - start_ns) / 1000000);
        out_str(&p, " ms after the start (rewritten when live bytes grow by ");
        out_u64(&p, step_percent);
        out_str(&p, "%)\n");
        out_finish(&p);
        exit_reports_heap_to(spec, preface);
        reported = bytes;
        any = true;
    }
    return NULL;
}

static void start_watching(void)
{
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    if (pthread_create(&t, &attr, watch, NULL) != 0)
        say("memprof: cannot start the thread that writes MEMPROF_PEAK_REPORT", (char *)NULL);
    else
        pthread_setname_np(t, "memprof-peak");
    pthread_attr_destroy(&attr);
}

/* A forked child has no watcher: its own, for its own report (SPEC.PID.NAME). */
static void after_fork_in_child(void)
{
    bool entered = reentry_enter();
    start_ns = now_ns();
    start_watching();
    if (entered)
        reentry_leave();
}

void peak_reports_init(unsigned long step)
{
    const char *value = getenv("MEMPROF_PEAK_REPORT");
    if (!value || !*value || strcmp(value, "none") == 0)
        return;
    if (strlen(value) >= sizeof spec) {
        say("memprof: ignoring MEMPROF_PEAK_REPORT: the path is too long", (char *)NULL);
        return;
    }
    strcpy(spec, value);
    step_percent = step;
    start_ns = now_ns();
    start_watching();
    pthread_atfork(NULL, NULL, after_fork_in_child);
}
