/* The C heap's peak, followed when the environment asks (MEMPROF_PEAK=1,
 * MEMPROF_HEAP_AT_PEAK, MEMPROF_PEAK_REPORT): the hooks snapshot the report
 * whenever live bytes pass the last snapshot's by MEMPROF_PEAK_STEP percent
 * (trace/heap_peak.h). With MEMPROF_PEAK_REPORT=FILE a thread of memprof's
 * own also writes each new snapshot to FILE, whole, within 100 ms of it: a
 * process the OOM killer ends, with no core and no exit, still leaves where
 * its memory went. */
#include "runtime.h"
#include "../trace/heap/heap.h"
#include "../trace/heap/heap_peak.h"
#include "own_thread.h"
#include "../util/reentry.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define INTERVAL_NS 100000000ull   /* 100 ms */

static const char *spec;   /* MEMPROF_PEAK_REPORT */
static uint64_t written;   /* the generation of the snapshot in the file */
static pthread_mutex_t writing = PTHREAD_MUTEX_INITIALIZER;

/* The newest snapshot into the file, if it is not there yet: false while
 * a hook is taking one (busy), to be tried again. */
static bool write_newest(void)
{
    pthread_mutex_lock(&writing);
    uint64_t generation = heap_peak_generation();
    bool done = true;
    if (generation != written) {
        done = exit_reports_heap_peak_to(spec) != MEMPROF_BUSY;
        if (done)
            written = generation;
    }
    pthread_mutex_unlock(&writing);
    return done;
}

static void watch(void *unused)
{
    (void)unused;
    for (;;) {
        nanosleep(&(struct timespec){ 0, (long)INTERVAL_NS }, NULL);
        write_newest();
    }
}

static void start_watching(void)
{
    static struct own_thread writer;
    own_thread_start(&writer, "memprof-peak", "MEMPROF_PEAK_REPORT is written at exit only", watch, NULL, NULL, 0);
}

/* At exit: the last snapshot, which the thread may not have written yet. */
static void write_at_exit(void)
{
    bool entered = reentry_enter();
    heap_peak_settle();
    /* Another thread of the program may be taking a snapshot: a while. */
    for (int tries = 0; tries < 200 && !write_newest(); tries++)
        nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
    if (entered)
        reentry_leave();
}

/* A forked child has no writer: its own, for its own report (SPEC.PID.NAME),
 * from its first snapshot of its own on. */
static void after_fork_in_child(void)
{
    bool entered = reentry_enter();
    pthread_mutex_init(&writing, NULL);
    written = heap_peak_generation();
    start_watching();
    if (entered)
        reentry_leave();
}

void peak_reports_init(unsigned long step)
{
    const char *value = env_get("MEMPROF_PEAK_REPORT");
    bool report = value && *value && strcmp(value, "none") != 0;
    if (!report && !env_says_yes("MEMPROF_PEAK") && !env_says_yes("MEMPROF_HEAP_AT_PEAK"))
        return;
    if (heap_peak_track((unsigned)step, heap_flags()) != MEMPROF_OK) {
        say("memprof: cannot follow the C heap's peak: its tables are busy", (char *)NULL);
        return;
    }
    if (!report)
        return;
    spec = value;
    start_watching();
    atexit(write_at_exit);
    pthread_atfork(NULL, NULL, after_fork_in_child);
}
