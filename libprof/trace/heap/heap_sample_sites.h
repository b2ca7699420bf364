/* Sampled call sites reached without the PLT. Through a GOT slot, a hook costs
 * every call a taken jump more than the plain program (the PLT's jump to the
 * hook, then the hook's to malloc): on a malloc/free loop that is most of
 * sampling's cost. So a `call malloc@plt` (or free) that holds a sample point
 * is pointed at a stub within rel32 reach holding sampling's fast path (the
 * thread's count; the filter's byte for a free) and jumping on to the real
 * function or, at a sample point, to the GOT hook: as many taken branches as
 * the plain call. Each site is checked before it is changed: the call rel32
 * before the return address, on an instruction boundary decoded from its
 * function's start (its unwind table's), calling a PLT entry whose slot holds
 * the hook. Every site is put back when sampling stops or its hooks change. */
#ifndef MEMPROF_TRACE_HEAP_SAMPLE_SITES_H
#define MEMPROF_TRACE_HEAP_SAMPLE_SITES_H
#include <stddef.h>
#include <stdint.h>

/* What the stubs need, read when sampling's hooks are installed. */
struct sample_stub_targets {
    int32_t count_offset;       /* the thread's byte count (heap_hooks.c's sample_left) from the thread pointer */
    const uint8_t *filter;      /* the sampled blocks' filter */
    const uintptr_t *free_targets; /* where a free goes by its filter byte */
                                /* (both below 2 GiB, or no site is changed) */
    uintptr_t next_malloc;      /* the real malloc (the real free is free_targets[0]) */
    uintptr_t malloc_hook, free_hook;      /* the GOT hooks: their slots hold these */
};

enum sample_site_kind { SAMPLE_SITE_MALLOC, SAMPLE_SITE_FREE };

/* Sites may be changed from now on. Not for hooks. */
void heap_sample_sites_enable(const struct sample_stub_targets *targets);
/* Every site changed put back, and none changed until enabled again. Not
 * for hooks (it may wait for an offer in another thread to finish). */
void heap_sample_sites_restore(void);
/* The call that returns to `ret` held a sample point: change its site if it
 * passes the checks. From a hook's slow path, inside reentry_enter: another
 * thread's offer in progress makes this one return at once. */
void heap_sample_sites_offer(uintptr_t ret, enum sample_site_kind kind);
/* Sites changed now (for reports and tests). */
size_t heap_sample_sites_count(void);
/* In a child after fork: an offer another thread had under way is gone. */
void heap_sample_sites_after_fork(void);
#endif
