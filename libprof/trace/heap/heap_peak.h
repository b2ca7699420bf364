/* The C heap at its peak: the report as it was when live bytes were
 * highest, within a step, without copying the table at every new maximum.
 *
 * Each thread adds what it allocates and frees to a count of its own and
 * passes it on to one shared estimate of the live bytes every 64 KiB (so
 * the shared line is written once per 64 KiB of change, not per call). When
 * the estimate passes the last snapshot's bytes by the step, the thread
 * that passed it makes the report there and then, inside its allocation:
 * the block that made the peak is still live. A snapshot replaces the last
 * only if its exact live bytes are higher. */
#ifndef MEMPROF_TRACE_HEAP_PEAK_H
#define MEMPROF_TRACE_HEAP_PEAK_H
#include "../../memprof.h"
#include "../../util/out.h"
#include <stdbool.h>
#include <stdint.h>

struct heap_thread;

#define HEAP_PEAK_BATCH (64 * 1024)

/* Follow the peak from now on, snapshotting when live bytes grow by
 * `step_percent` (1-1000) over the last snapshot; the snapshots as the raw
 * report with `flags` (MEMPROF_REPORT_BY_THREAD, _FREED_SITES). */
enum memprof_status heap_peak_track(unsigned step_percent, int flags);
bool heap_peak_tracked(void);

/* From the hooks (the owner thread only): bytes recorded live, and bytes of
 * a block freed (its own, or another thread's by its usable size). */
void heap_peak_grew(struct heap_thread *t, uint64_t bytes);
void heap_peak_shrank(struct heap_thread *t, uint64_t bytes);

/* A snapshot now if live bytes are above the last one's (at exit, and
 * before a reader asks). */
void heap_peak_settle(void);
/* The last snapshot, copied into `o`: MEMPROF_BUSY when one is being made,
 * MEMPROF_BAD_ARGUMENT when the peak is not followed; *have false when
 * there is none yet. */
enum memprof_status heap_peak_write(struct out *o, bool *have);
/* Changes with each new snapshot (peak reports rewrite their file then). */
uint64_t heap_peak_generation(void);
void heap_peak_after_fork(void);
#endif
