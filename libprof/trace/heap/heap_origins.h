/* Where a recorded block comes from: its origin, the (site, callers, Ruby
 * line) its thread interns (heap_thread.h), found by walking the stack or
 * remembered from the last walk from the same entry. The hooks
 * (heap_hooks.c) ask only when the thread's last site is not the answer. */
#ifndef MEMPROF_TRACE_HEAP_ORIGINS_H
#define MEMPROF_TRACE_HEAP_ORIGINS_H
#include "heap_thread.h"
#include "heap_wrappers.h"
#include "../../hook/got.h"
#include "../../unwind/backtrace.h"
#include "../../util/reentry.h"

/* The origin of an allocation at `site` (UINT32_MAX when out of memory).
 * `entry_cfa`, if not 0: malloc's hook's CFA, with its return address
 * `entry_pc` and the caller's %rbp, where a walk starts. */
uint32_t heap_full_origin(struct heap_thread *t, uintptr_t site, uintptr_t entry_pc, uintptr_t entry_cfa,
                          uintptr_t entry_bp) __attribute__((noinline));
/* The thread's last site and its origin `id`: the hooks' shortest path. */
static inline __attribute__((always_inline)) void heap_remember_last_site(struct heap_thread *t, uintptr_t site,
                                                                          uint32_t id)
{
    t->last_key = (uint64_t)site | (uint64_t)t->serial << THREAD_SHIFT;
    t->last_site = site;
    t->last_origin_word = BLOCK_WORD(0, id);
    t->last_record = &t->origins->records[id];
}

static inline __attribute__((always_inline)) uint32_t *heap_site_origin_slot(const struct heap_thread *t,
                                                                            uintptr_t site)
{
    /* Nearby sites in slots of their own; 64 KiB of code further, another order. */
    return &t->site_origins[((site >> 3) ^ (site >> 16)) & ((1u << SITE_ORIGIN_BITS) - 1)];
}

/* The origin of an allocation at `site` when that is the site alone (one
 * frame, not in a wrapper, no Ruby line) and the thread has seen the site
 * lately, made the thread's last; else UINT32_MAX. Inline: a program that
 * allocates from many sites in turn asks on every allocation. */
static inline __attribute__((always_inline)) uint32_t heap_site_origin(struct heap_thread *t, uintptr_t site)
{
    if (!t->site_origins)
        return UINT32_MAX;
    uint32_t at = *heap_site_origin_slot(t, site);
    if (at == 0)
        return UINT32_MAX;
    const struct heap_origin *r = &t->origins->records[at - 1];
    if (r->key != ((uint64_t)site | (uint64_t)t->serial << THREAD_SHIFT) || r->alone != heap_wrappers_generation() + 1)
        return UINT32_MAX;
    /* Not from a hook inside memprof (a signal handler's, behind the signal
     * guard): its four words would tear those of the hook it interrupted. */
    if (reentry_inside())
        return UINT32_MAX;
    heap_remember_last_site(t, site, at - 1);
    return at - 1;
}
/* memprof's own code and, for more than one frame, libunwind: found before
 * any hook is installed (dlopen allocates). */
void heap_backtraces_prepare(void);

/* The origin of the last walk from this entry (return address `pc`, CFA
 * and the caller's %rbp), if `memo` holds it for `site` and a walk now would
 * find the same frames (the same frames asked for, the same wrappers' tables:
 * not with Ruby lines, which the C stack does not name); else UINT32_MAX. */
static inline __attribute__((always_inline)) uint32_t memo_origin(struct heap_thread *t, const struct heap_memo *memo,
                                                                  uintptr_t site, uintptr_t pc, uintptr_t cfa,
                                                                  uintptr_t bp)
{
    if (!memo->valid || memo->site != site || memo->frames != heap.frames || !t->unwind ||
        memo->generation != heap_wrappers_generation() ||
        !unwind_memo_holds(t->unwind, got_objects_generation(), pc, cfa, bp))
        return UINT32_MAX;
    owner_add(&t->stacks_remembered, 1);
    return memo->origin;
}

/* %rbp in the hook's caller, from %rbp at the hook's entry: built with
 * frame pointers, the hook had pushed the caller's. */
static inline __attribute__((always_inline)) uintptr_t callers_bp(uintptr_t entry_cfa, uintptr_t entry_bp)
{
    return entry_bp == entry_cfa - 16 ? *(const uintptr_t *)(entry_cfa - 16) : entry_bp;
}

#endif
