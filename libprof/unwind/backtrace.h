/* Backtraces of the calling thread from the compiler's call frame
 * information (cfi.h), each pc's rule read once into a cache of the
 * caller's: the unwinding libunwind's unw_backtrace does, for the frames
 * this subset can step through, at a few loads a frame. -1 when a frame
 * needs more (a signal frame, a DWARF expression): ask libunwind. No
 * malloc, no lock; callable from a hook. */
#ifndef MEMPROF_UNWIND_BACKTRACE_H
#define MEMPROF_UNWIND_BACKTRACE_H
#include "cfi.h"
#include <stdbool.h>
#include <stdint.h>

#define UNWIND_CACHE_BITS 12
#define UNWIND_RECENT 32

struct unwind_cache_entry {
    uintptr_t pc;           /* 0: empty */
    struct cfi_rule rule;   /* cfa_base CFI_UNKNOWN: cannot say */
};

/* What a walk from a function's entry read, so that the next walk from the
 * same entry can tell it would find the same frames by reading the same
 * words again: the rules are the pc's, and the CFAs follow from the entry's
 * registers and the words read. */
#define UNWIND_MEMO_READS 40
struct unwind_memo {
    uintptr_t pc, sp, bp;   /* the entry's; pc 0: no memo */
    uint64_t generation;
    bool uses_bp;           /* a CFA came from %rbp: bp and its reads count */
    int reads;
    uintptr_t addr[UNWIND_MEMO_READS], value[UNWIND_MEMO_READS];
    bool is_bp[UNWIND_MEMO_READS];
};

/* Walks remembered, one per entry (pc, sp) in a direct-mapped table: a
 * program allocates from a few stacks in turn (sqlite3 from 4 that
 * alternate), and the last walk alone is seldom the one found again. */
#define UNWIND_MEMO_BITS 5
#define UNWIND_MEMOS (1u << UNWIND_MEMO_BITS)

struct unwind_cache {
    uint64_t generation;    /* of the objects its rules were read from */
    int frames_said;        /* a walk that returned -1: the frames it had returned first */
    struct unwind_memo memos[UNWIND_MEMOS];   /* of the last walks from entries */
    /* The last stack's rules by depth, in a few cache lines: stacks repeat. */
    struct unwind_cache_entry recent[UNWIND_RECENT];
    struct unwind_cache_entry entries[1u << UNWIND_CACHE_BITS];
};

/* As unw_backtrace: the return addresses from this function's to the
 * outermost frame's, at most `max`; how many, or -1 (those it could say
 * are in `frames`, cache->frames_said of them). `generation`
 * changes whenever objects were loaded since (the cache is emptied: a new
 * object may sit where an unloaded one was). */
int unwind_backtrace(struct unwind_cache *cache, uint64_t generation, void **frames, int max);
/* The same from a function's entry, given by its return address `pc`, its
 * CFA (the caller's %rsp once it returns) and %rbp there: the frames
 * between it and this call are not walked, nor returned. */
int unwind_backtrace_from(struct unwind_cache *cache, uint64_t generation, uintptr_t pc, uintptr_t sp,
                          uintptr_t bp, void **frames, int max);
/* The memo slot of an entry (pc, sp): 0 to UNWIND_MEMOS - 1. */
static inline unsigned unwind_memo_slot(uintptr_t pc, uintptr_t sp)
{
    return (unsigned)(((pc ^ sp * 0xC2B2AE3D27D4EB4Full) * 0x9E3779B97F4A7C15ull) >> (64 - UNWIND_MEMO_BITS));
}

/* Did the last walk from this entry's slot start at this entry (pc, sp)? */
static inline bool unwind_memo_recorded(const struct unwind_cache *cache, uintptr_t pc, uintptr_t sp)
{
    const struct unwind_memo *m = &cache->memos[unwind_memo_slot(pc, sp)];
    return m->pc == pc && m->sp == sp;
}

/* Would a walk from this entry find the frames the last walk from the same
 * entry found (its memo)? A few loads a frame, no rule looked up. */
static inline bool unwind_memo_holds(const struct unwind_cache *cache, uint64_t generation, uintptr_t pc,
                                     uintptr_t sp, uintptr_t bp)
{
    const struct unwind_memo *m = &cache->memos[unwind_memo_slot(pc, sp)];
    if (!m->pc || m->pc != pc || m->sp != sp || m->generation != generation ||
        cache->generation != generation || (m->uses_bp && m->bp != bp))
        return false;
    for (int i = 0; i < m->reads; i++)
        if ((m->uses_bp || !m->is_bp[i]) && *(const uintptr_t *)m->addr[i] != m->value[i])
            return false;
    return true;
}
#endif
