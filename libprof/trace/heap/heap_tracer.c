/* The C heap tracer's life: its settings, starting and stopping it (the
 * hooks are heap_hooks.c's), fork, and the threads' totals. */
#include "heap.h"
#include "heap_hooks.h"
#include "heap_origins.h"
#include "heap_ruby.h"
#include "heap_cxx.h"
#include "heap_peak.h"
#include "heap_sample_sites.h"
#include "../../store/readers.h"
#include "../../util/pages.h"
#include "../../util/reentry.h"
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct heap_state heap = { .frames = 1 };

size_t heap_thread_bytes(const struct heap_thread *t)
{
    struct origin_array *o = __atomic_load_n(&t->origins, __ATOMIC_ACQUIRE);
    return sizeof *t + (t->callers ? CALLER_CACHE * sizeof *t->callers : 0) + (t->unwind ? sizeof *t->unwind : 0) +
           (t->site_origins ? sizeof *t->site_origins << SITE_ORIGIN_BITS : 0) +
           block_table_bytes(&t->blocks) + block_table_bytes(&t->freed) +
           (o ? sizeof *o + o->capacity * sizeof o->records[0] : 0) +
           t->origin_index_capacity * sizeof *t->origin_index;
}

static void prepare_once(void)
{
    pthread_atfork(NULL, NULL, heap_tracer_after_fork);
    heap.exit_key_made = pthread_key_create(&heap.exit_key, heap_record_give_up) == 0;
}

bool heap_tracer_set_sample(uint64_t bytes, uint64_t seed)
{
    if (bytes == heap.sample_bytes && (!seed || seed == heap.sample_seed))
        return true;
    /* Blocks recorded with another scale would be counted wrong. */
    if (__atomic_load_n(&heap.threads, __ATOMIC_ACQUIRE) || bytes > HEAP_SAMPLE_MAX)
        return false;
    /* Low, for the sampled sites' stubs (heap_sample_sites.c); anywhere else
     * the hooks still work, without stubs. */
    size_t filter_size = sizeof *heap.sampled_filter << SAMPLED_FILTER_BITS,
           size = filter_size + SAMPLED_FREE_TARGETS * sizeof *heap.sampled_free_targets;
    if (bytes && !heap.sampled_filter) {
        uint8_t *low = pages_alloc_low(size);
        if (!low && !(low = pages_alloc(size)))
            return false;
        /* Read at random by every free: mapped now, not a fault a page. */
        pages_fill(low, size);
        heap.sampled_free_targets = (uintptr_t *)(low + filter_size);
        heap.sampled_filter = low;
    }
    if (!seed) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        seed = (uint64_t)now.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)now.tv_sec ^ (uint64_t)getpid() << 32;
    }
    heap.sample_seed = seed;
    heap.sample_bytes = bytes;
    heap_short_paths_refresh();
    return true;
}

uint64_t heap_tracer_sample_bytes(void)
{
    return heap.sample_bytes;
}

bool heap_tracer_set_frames(int frames)
{
    if (frames < 1 || frames > HEAP_MAX_FRAMES)
        return false;
    heap.frames = frames;
    heap_short_paths_refresh();
    return true;
}

static char wrapper_patterns[1024], wrapper_message[512];
static bool wrapper_problem;

void heap_tracer_set_wrappers(const char *patterns)
{
    snprintf(wrapper_patterns, sizeof wrapper_patterns, "%s", patterns ? patterns : "");
}

/* Each thread's last site forgotten: its origin was found with the old
 * wrappers, and the short paths trust it with no question (the site table
 * and the walk's memos check the wrappers' generation). A thread inside a
 * hook meanwhile, not stopped at a GDB safe point, may remember its site
 * once more. */
static void forget_last_sites(void)
{
    for (struct heap_thread *t = __atomic_load_n(&heap.threads, __ATOMIC_ACQUIRE); t; t = t->next) {
        __atomic_store_n(&t->last_key, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&t->last_site, 0, __ATOMIC_RELAXED);
    }
}

bool heap_tracer_rebuild_wrappers(char *message, size_t size)
{
    bool built = heap_wrappers_build(wrapper_patterns, message, size);
    forget_last_sites();
    return built;
}

const char *heap_tracer_wrapper_problem(void)
{
    bool problem = wrapper_problem;
    wrapper_problem = false;
    return problem ? wrapper_message : NULL;
}

int heap_tracer_frames(void)
{
    return heap.frames;
}

enum memprof_status heap_tracer_start(void)
{
    static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
    if (heap.running)
        return MEMPROF_OK;
    heap_backtraces_prepare();
    if (!heap_wrappers_build(wrapper_patterns, wrapper_message, sizeof wrapper_message))
        wrapper_problem = true;
    heap_ruby_enable();
    pthread_once(&atfork_once, prepare_once);
    if (heap_hooks_install() != 0)
        return MEMPROF_HOOK_FAILED;
    /* Without it, a new is charged to operator new itself. Before recording
     * starts: a failed dlsym allocates its error message. */
    heap_cxx_start();
    __atomic_store_n(&heap.running, true, __ATOMIC_RELEASE);
    heap_short_paths_refresh();
    return MEMPROF_OK;
}

/* Recording stopped; the GOT slots given back, or (at exit) left patched,
 * malloc's and free's pointed at the stopped mode's entries. */
static void stop(bool give_slots_back)
{
    if (!heap.running)
        return;
    heap_sample_sites_restore();
    __atomic_store_n(&heap.running, false, __ATOMIC_RELEASE);
    heap_cxx_stop();
    if (give_slots_back)
        heap_hooks_remove();
    heap_short_paths_refresh();   /* after: the slots are given back once */
}

void heap_tracer_stop(void)
{
    stop(true);
}

void heap_tracer_stop_at_exit(void)
{
    stop(false);
}

bool heap_tracer_running(void)
{
    return heap.running;
}

void heap_tracer_after_fork(void)
{
    /* Only the forking thread survives: a report another thread was making
     * is gone with it. The other threads' tables stay: their blocks are in
     * this process's heap too. */
    spin_reset(&heap.report_lock);
    heap_sample_sites_after_fork();
    heap_peak_after_fork();
    readers_after_fork();
    heap_ruby_after_fork();
    heap_records_after_fork();
}

void heap_tracer_thread_begin(void)
{
    if (!__atomic_load_n(&heap.running, __ATOMIC_RELAXED) || !reentry_enter())
        return;
    heap_thread_record();
    reentry_leave();
}

static void sum_origins(const struct heap_thread *t, uint64_t *count, uint64_t *bytes)
{
    *count = *bytes = 0;
    size_t n = __atomic_load_n(&t->origin_count, __ATOMIC_ACQUIRE);
    const struct origin_array *a = __atomic_load_n(&t->origins, __ATOMIC_ACQUIRE);
    for (size_t i = t->origins_from; a && i < n; i++) {
        if (ORIGIN_THREAD(a->records[i].key) != t->serial)
            continue;   /* a caller in a chain, or an earlier thread's (the record was taken) */
        *count += __atomic_load_n(&a->records[i].total_count, __ATOMIC_RELAXED);
        *bytes += __atomic_load_n(&a->records[i].total_bytes, __ATOMIC_RELAXED);
    }
}

bool heap_current_thread_totals(uint64_t *count, uint64_t *bytes)
{
    if (!heap_my_thread)
        return false;
    sum_origins(heap_my_thread, count, bytes);
    return true;
}

bool heap_thread_totals(pid_t tid, uint64_t *count, uint64_t *bytes)
{
    for (struct heap_thread *t = __atomic_load_n(&heap.threads, __ATOMIC_ACQUIRE); t; t = t->next) {
        if (t->tid == tid && !__atomic_load_n(&t->exited, __ATOMIC_ACQUIRE)) {
            sum_origins(t, count, bytes);
            return true;
        }
    }
    return false;
}

void heap_tracer_stacks(uint64_t *walked, uint64_t *remembered)
{
    *walked = *remembered = 0;
    for (struct heap_thread *t = __atomic_load_n(&heap.threads, __ATOMIC_ACQUIRE); t; t = t->next) {
        *walked += __atomic_load_n(&t->stacks_walked, __ATOMIC_RELAXED);
        *remembered += __atomic_load_n(&t->stacks_remembered, __ATOMIC_RELAXED);
    }
}

uint64_t heap_tracer_grown_direct(void)
{
    uint64_t n = 0;
    for (struct heap_thread *t = __atomic_load_n(&heap.threads, __ATOMIC_ACQUIRE); t; t = t->next)
        n += __atomic_load_n(&t->grown_direct, __ATOMIC_RELAXED);
    return n;
}

void heap_tracer_usage(unsigned long *blocks, unsigned long *bytes)
{
    unsigned long count = 0, total = heap_ruby_bytes() + heap_identities_bytes();
    for (struct heap_thread *t = __atomic_load_n(&heap.threads, __ATOMIC_ACQUIRE); t; t = t->next) {
        count += __atomic_load_n(&t->blocks.count, __ATOMIC_RELAXED) +
                 __atomic_load_n(&t->blocks_spill.count, __ATOMIC_RELAXED);
        for (size_t i = 0; i < YOUNG_HELD; i++)
            count += __atomic_load_n(&t->young[i].addr, __ATOMIC_RELAXED) != BLOCK_EMPTY;
        total += heap_thread_bytes(t);
    }
    *blocks = count;
    *bytes = total;
}
