/* The C heap at its peak (heap_peak.h). The snapshots are raw reports kept
 * in two mmap'd buffers: one published, the other written by the next
 * snapshot. One try-lock guards them; a hook that finds it taken skips its
 * snapshot (the next 64 KiB of growth tries again), a reader answers busy. */
#include "heap_peak.h"
#include "../../util/clock.h"
#include "heap.h"
#include "heap_thread.h"
#include "../../util/spinlock.h"
#include <time.h>

static struct {
    _Alignas(CACHE_LINE) int64_t live;   /* the estimate, from the threads' batches */
    _Alignas(CACHE_LINE) int64_t next_at;   /* the next snapshot when live reaches it */
    unsigned step;
    int flags;
    uint64_t start_ns;
    spinlock_t lock;                     /* the buffers and what describes them */
    struct out buffers[2];
    int published;                       /* index, -1: none yet */
    uint64_t bytes, generation;
} peak = { .published = -1 };

static int64_t threshold_after(uint64_t bytes)
{
    uint64_t next = bytes + bytes / 100 * peak.step;
    return (int64_t)(next > bytes + HEAP_PEAK_BATCH ? next : bytes + HEAP_PEAK_BATCH);
}

/* The report now into the spare buffer, published if its live bytes pass
 * the last snapshot's. The estimate is set right by the exact count. */
static void snapshot(void)
{
    if (!spin_trylock(&peak.lock))
        return;
    int64_t estimate = __atomic_load_n(&peak.live, __ATOMIC_RELAXED);
    int spare = peak.published == 0 ? 1 : 0;
    struct out *o = &peak.buffers[spare];
    out_release_mem(o);
    out_init_mem(o);
    uint64_t bytes = 0;
    size_t blocks = 0;
    enum heap_format format = peak.flags & MEMPROF_REPORT_FREED_SITES ? HEAP_FORMAT_TEXT_ALL : HEAP_FORMAT_TEXT;
    enum memprof_status status =
        heap_tracer_report_totals(o, 0, (peak.flags & MEMPROF_REPORT_BY_THREAD) != 0, format, &bytes, &blocks);
    if (status == MEMPROF_OK) {
        __atomic_add_fetch(&peak.live, (int64_t)bytes - estimate, __ATOMIC_RELAXED);
        if (peak.published < 0 || bytes > peak.bytes) {
            /* How close: a later peak could be up to a step higher, and each
             * thread holds up to a batch it has not passed on. */
            out_str(o, "# peak ");
            out_u64(o, bytes);
            out_str(o, " bytes in ");
            out_u64(o, blocks);
            out_str(o, " blocks, ");
            out_u64(o, (clock_now_ns() - peak.start_ns) / 1000000);
            out_str(o, " ms after the start (within ");
            out_u64(o, peak.step);
            out_str(o, "% and 64 KiB a thread)\n");
            if (out_finish(o) == 0) {
                peak.published = spare;
                peak.bytes = bytes;
                __atomic_add_fetch(&peak.generation, 1, __ATOMIC_RELEASE);
            }
        }
        __atomic_store_n(&peak.next_at, threshold_after(peak.bytes > bytes ? peak.bytes : bytes), __ATOMIC_RELAXED);
    }
    spin_unlock(&peak.lock);
}

enum memprof_status heap_peak_track(unsigned step_percent, int flags)
{
    if (heap.peak_tracking)
        return MEMPROF_OK;
    uint64_t bytes = 0;
    size_t blocks;
    enum memprof_status status = heap_tracer_live(&bytes, &blocks);
    if (status != MEMPROF_OK)
        return status;
    peak.step = step_percent;
    peak.flags = flags;
    peak.start_ns = clock_now_ns();
    peak.live = (int64_t)bytes;
    peak.next_at = threshold_after(0);
    __atomic_store_n(&heap.peak_tracking, true, __ATOMIC_RELEASE);
    heap_short_paths_refresh();   /* the hooks that count the peak */
    return MEMPROF_OK;
}

bool heap_peak_tracked(void)
{
    return __atomic_load_n(&heap.peak_tracking, __ATOMIC_ACQUIRE);
}

void heap_peak_grew(struct heap_thread *t, uint64_t bytes)
{
    if ((t->peak_delta += (int64_t)bytes) < HEAP_PEAK_BATCH)
        return;
    int64_t live = __atomic_add_fetch(&peak.live, t->peak_delta, __ATOMIC_RELAXED);
    t->peak_delta = 0;
    if (live >= __atomic_load_n(&peak.next_at, __ATOMIC_RELAXED))
        snapshot();
}

void heap_peak_shrank(struct heap_thread *t, uint64_t bytes)
{
    if ((t->peak_delta -= (int64_t)bytes) > -HEAP_PEAK_BATCH)
        return;
    __atomic_add_fetch(&peak.live, t->peak_delta, __ATOMIC_RELAXED);
    t->peak_delta = 0;
}

void heap_peak_settle(void)
{
    if (heap_peak_tracked())
        snapshot();
}

enum memprof_status heap_peak_write(struct out *o, bool *have)
{
    *have = false;
    if (!heap_peak_tracked())
        return MEMPROF_BAD_ARGUMENT;
    if (!spin_trylock(&peak.lock))
        return MEMPROF_BUSY;
    if (peak.published >= 0) {
        const struct out *b = &peak.buffers[peak.published];
        out_bytes(o, b->buf, b->len);
        *have = true;
    }
    spin_unlock(&peak.lock);
    return MEMPROF_OK;
}

uint64_t heap_peak_generation(void)
{
    return __atomic_load_n(&peak.generation, __ATOMIC_ACQUIRE);
}

void heap_peak_after_fork(void)
{
    /* A snapshot another thread was making is gone with it. */
    spin_reset(&peak.lock);
}
