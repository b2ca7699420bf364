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

struct unwind_cache {
    uint64_t generation;    /* of the objects its rules were read from */
    struct unwind_memo memo;   /* of the last walk from an entry */
    /* The last stack's rules by depth, in a few cache lines: stacks repeat. */
    struct unwind_cache_entry recent[UNWIND_RECENT];
    struct unwind_cache_entry entries[1u << UNWIND_CACHE_BITS];
};

/* As unw_backtrace: the return addresses from this function's to the
 * outermost frame's, at most `max`; how many, or -1. `generation`
 * changes whenever objects were loaded since (the cache is emptied: a new
 * object may sit where an unloaded one was). */
int unwind_backtrace(struct unwind_cache *cache, uint64_t generation, void **frames, int max);
/* The same from a function's entry, given by its return address `pc`, its
 * CFA (the caller's %rsp once it returns) and %rbp there: the frames
 * between it and this call are not walked, nor returned. */
int unwind_backtrace_from(struct unwind_cache *cache, uint64_t generation, uintptr_t pc, uintptr_t sp,
                          uintptr_t bp, void **frames, int max);
/* Would a walk from this entry find the frames the last walk from an entry
 * found (cache->memo)? A few loads a frame, no rule looked up. */
static inline bool unwind_memo_holds(const struct unwind_cache *cache, uint64_t generation, uintptr_t pc,
                                     uintptr_t sp, uintptr_t bp)
{
    const struct unwind_memo *m = &cache->memo;
    if (!m->pc || m->pc != pc || m->sp != sp || m->generation != generation ||
        cache->generation != generation || (m->uses_bp && m->bp != bp))
        return false;
    for (int i = 0; i < m->reads; i++)
        if ((m->uses_bp || !m->is_bp[i]) && *(const uintptr_t *)m->addr[i] != m->value[i])
            return false;
    return true;
}
#endif
