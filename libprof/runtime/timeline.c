/* The C heap over time (MEMPROF_TIMELINE=FILE): a thread of memprof's own
 * reads the live bytes of every call site at a fixed interval and writes the
 * total and the largest sites' bytes as one line. It reads the threads'
 * own counts with no lock a hook takes, and allocates nothing but pages.
 * The interval doubles every 1000 samples, so a long run stays a few
 * thousand lines. The file is written whole at exit (doc/formats.md). The
 * thread keeps the file in a descriptor table of its own (own_files.h) and
 * gives it its name when the exit asks. */
#include "runtime.h"
#include "../util/clock.h"
#include "own_thread.h"
#include "../objfile/object.h"
#include "../trace/heap/heap.h"
#include "../util/atomic_file.h"
#include "../util/pages.h"
#include "../util/reentry.h"
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TOP_SITES 10
#define MAX_SITES 4096          /* sites named in the file; later ones count in the total only */
#define MAX_OBJECTS 256
#define SAMPLES_PER_DOUBLING 1000
#define EXIT_WAIT_S 5

static struct {
    struct atomic_file file;
    pid_t owner;                 /* the process that writes it (not a forked child) */
    uint64_t interval_ns, start_ns;
    unsigned long samples;
    pthread_mutex_t lock;        /* the sampler and the exit handler */
    pthread_cond_t wake;         /* the exit's word to the sampler, and its answer */
    bool stop, done;
    struct heap_site_scratch scratch;
    uintptr_t named[MAX_SITES];  /* sites written so far, by their ids */
    size_t named_count;
    struct elf_object *objects;  /* [MAX_OBJECTS], taken again for a site outside them */
    size_t object_count;
    char buffer[8192];
    struct out o;
} tl = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* The site's id in the file, written there the first time ("s ID ADDRESS
 * OBJECT+OFFSET"); -1 when the table of names is full. */
static long site_id(uintptr_t site)
{
    for (size_t i = 0; i < tl.named_count; i++)
        if (tl.named[i] == site)
            return (long)i;
    if (tl.named_count == MAX_SITES)
        return -1;
    if (!elf_objects_find(tl.objects, tl.object_count, site - 1)) {
        size_t n = elf_objects_snapshot(tl.objects, MAX_OBJECTS);
        tl.object_count = n < MAX_OBJECTS ? n : MAX_OBJECTS;
    }
    tl.named[tl.named_count] = site;
    out_str(&tl.o, "s ");
    out_u64(&tl.o, tl.named_count);
    out_char(&tl.o, ' ');
    heap_write_site(&tl.o, site, tl.objects, tl.object_count);
    out_char(&tl.o, '\n');
    return (long)tl.named_count++;
}

/* "t MS TOTAL ID:BYTES..." */
static void sample(void)
{
    struct heap_site_bytes top[TOP_SITES];
    uint64_t total;
    size_t n = heap_tracer_site_bytes(&tl.scratch, top, TOP_SITES, &total);
    long ids[TOP_SITES];
    for (size_t i = 0; i < n; i++)
        ids[i] = site_id(top[i].site);
    out_str(&tl.o, "t ");
    out_u64(&tl.o, (clock_now_ns() - tl.start_ns) / 1000000);
    out_char(&tl.o, ' ');
    out_u64(&tl.o, total);
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0)
            continue;
        out_char(&tl.o, ' ');
        out_u64(&tl.o, (uint64_t)ids[i]);
        out_char(&tl.o, ':');
        out_u64(&tl.o, top[i].bytes);
    }
    out_char(&tl.o, '\n');
    tl.samples++;
}

/* The last sample, and the file given its name. */
static void commit(void)
{
    sample();
    int err = out_finish(&tl.o);
    err = err ? err : atomic_file_commit(&tl.file);
    if (err)
        say("memprof: cannot write the timeline to ", tl.file.path, ": ", strerror(err), (char *)NULL);
}

static void sampler(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&tl.lock);
    struct timespec at;
    clock_gettime(CLOCK_MONOTONIC, &at);
    for (;;) {
        uint64_t interval = tl.interval_ns << (tl.samples / SAMPLES_PER_DOUBLING < 16 ? tl.samples / SAMPLES_PER_DOUBLING : 16);
        uint64_t next = (uint64_t)at.tv_nsec + interval % 1000000000ull;
        at.tv_sec += (time_t)(interval / 1000000000ull + next / 1000000000ull);
        at.tv_nsec = (long)(next % 1000000000ull);
        while (!tl.stop && pthread_cond_timedwait(&tl.wake, &tl.lock, &at) != ETIMEDOUT)
            ;
        if (tl.stop)
            break;
        sample();
    }
    commit();
    tl.done = true;
    pthread_cond_broadcast(&tl.wake);
    pthread_mutex_unlock(&tl.lock);
}

/* At exit: the sampler asked for its last sample and the file's name. */
static void finish(void)
{
    if (getpid() != tl.owner)
        return;   /* a forked child: the file is its parent's */
    bool entered = reentry_enter();
    pthread_mutex_lock(&tl.lock);
    tl.stop = true;
    pthread_cond_broadcast(&tl.wake);
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += EXIT_WAIT_S;
    while (!tl.done && pthread_cond_timedwait(&tl.wake, &tl.lock, &deadline) != ETIMEDOUT)
        ;
    if (!tl.done)
        say("memprof: the timeline was not written: its thread did not answer within 5 s", (char *)NULL);
    pthread_mutex_unlock(&tl.lock);
    if (entered)
        reentry_leave();
}

void timeline_init(unsigned long interval_ms)
{
    const char *spec = env_get("MEMPROF_TIMELINE");
    char path[PATH_MAX];
    if (!spec || !*spec || strcmp(spec, "none") == 0)
        return;
    if (!expand_output_path(spec, path, sizeof path)) {
        say("memprof: cannot write the timeline to ", spec, ": ", strerror(ENAMETOOLONG), (char *)NULL);
        return;
    }
    int err = atomic_file_open(&tl.file, path);
    if (err) {
        say("memprof: cannot write the timeline to ", path, ": ", strerror(err), (char *)NULL);
        return;
    }
    tl.file.scratch = report_path_is_scratch(path);
    if (!(tl.objects = pages_alloc(MAX_OBJECTS * sizeof *tl.objects))) {
        atomic_file_abort(&tl.file);
        return;
    }
    tl.owner = getpid();
    tl.interval_ns = (uint64_t)interval_ms * 1000000ull;
    tl.start_ns = clock_now_ns();
    out_init_fd(&tl.o, tl.file.fd, tl.buffer, sizeof tl.buffer);
    out_str(&tl.o, "# memprof timeline: live C heap bytes by call site over time\n# pid ");
    out_u64(&tl.o, (uint64_t)getpid());
    out_str(&tl.o, "\n# interval ");
    out_u64(&tl.o, interval_ms);
    out_str(&tl.o, " ms, doubling every 1000 samples\n");
    sample();   /* the start */
    pthread_condattr_t clock;
    pthread_condattr_init(&clock);
    pthread_condattr_setclock(&clock, CLOCK_MONOTONIC);
    pthread_cond_init(&tl.wake, &clock);
    pthread_condattr_destroy(&clock);
    /* The file is the thread's once it has its own table. A thread not
     * yet run keeps it in both. */
    static struct own_thread sampler_thread;
    err = own_thread_start(&sampler_thread, "memprof-tline", "no timeline", sampler, NULL, &tl.file.fd, 1);
    if (err && err != ETIMEDOUT) {
        atomic_file_abort(&tl.file);
        return;
    }
    atexit(finish);
}
