/* Stepping from frame to frame with the rules of cfi.c: the caller's stack
 * pointer is the CFA, its pc the return address saved below it, its frame
 * pointer the one saved or the same. */
#include "backtrace.h"
#include "../arch/cpu.h"
#include <string.h>

/* A CFA further than this above the stack pointer is taken for a damaged
 * stack: libunwind decides. */
#define MAX_FRAME_BYTES ((uintptr_t)16 << 20)

/* The rule at `pc`, the `depth`th frame: the last stack's at that depth,
 * else the cache's, else read and kept in both. */
static inline __attribute__((always_inline)) const struct cfi_rule *rule_for(struct unwind_cache *cache, uintptr_t pc, int depth)
{
    struct unwind_cache_entry *recent = depth < UNWIND_RECENT ? &cache->recent[depth] : NULL;
    if (recent && recent->pc == pc)
        return &recent->rule;
    struct unwind_cache_entry *e = &cache->entries[(pc * 0x9E3779B97F4A7C15ull) >> (64 - UNWIND_CACHE_BITS)];
    if (e->pc != pc) {
        if (!cfi_rule_at(pc, &e->rule))
            e->rule.cfa_base = CFI_UNKNOWN;
        e->pc = pc;
    }
    if (recent)
        *recent = *e;
    return &e->rule;
}

static void check_generation(struct unwind_cache *cache, uint64_t generation)
{
    if (cache->generation != generation) {
        memset(cache->recent, 0, sizeof cache->recent);
        memset(cache->entries, 0, sizeof cache->entries);
        cache->generation = generation;
    }
}

static inline __attribute__((always_inline)) uintptr_t read_word(struct unwind_memo *memo, uintptr_t addr, bool is_bp)
{
    uintptr_t value = *(const uintptr_t *)addr;
    if (memo) {
        if (memo->reads < UNWIND_MEMO_READS) {
            memo->addr[memo->reads] = addr;
            memo->value[memo->reads] = value;
            memo->is_bp[memo->reads] = is_bp;
        }
        memo->reads++;   /* past the end: no memo */
    }
    return value;
}

/* From the frame at pc with those registers; `returned`: pc is a return
 * address, and the first frame. Every word read goes to `memo`, if any. */
static inline __attribute__((always_inline)) int walk(struct unwind_cache *cache, uintptr_t pc, uintptr_t sp, uintptr_t bp, bool returned,
                void **frames, int max, struct unwind_memo *memo)
{
    int n = 0;
    for (; n < max && pc; returned = true) {
        if (returned)   /* as unw_backtrace: from this function's return address */
            frames[n++] = (void *)pc;
        /* A return address is looked up at its call: the byte before. */
        const struct cfi_rule *rule = rule_for(cache, returned ? pc - 1 : pc, n + returned);
        if (rule->cfa_base == CFI_UNKNOWN)
            return cache->frames_said = n, -1;
        if (rule->outermost)
            break;
        if (memo && rule->cfa_base == CFI_RBP)
            memo->uses_bp = true;
        uintptr_t cfa = (rule->cfa_base == CFI_RSP ? sp : bp) + (uintptr_t)rule->cfa_offset;
        if (cfa <= sp || cfa - sp > MAX_FRAME_BYTES)
            return cache->frames_said = n, -1;
        pc = read_word(memo, cfa + (intptr_t)rule->ra_offset, false);
        if (rule->rbp_offset)
            bp = read_word(memo, cfa + (intptr_t)rule->rbp_offset, true);
        sp = cfa;
    }
    return n;
}

__attribute__((noinline)) int unwind_backtrace(struct unwind_cache *cache, uint64_t generation, void **frames, int max)
{
    check_generation(cache, generation);
    uintptr_t pc, sp, bp;
    /* Where this function is, with its registers there: frame 0. */
    CPU_HERE(pc, sp, bp);
    return walk(cache, pc, sp, bp, false, frames, max, NULL);
}

int unwind_backtrace_from(struct unwind_cache *cache, uint64_t generation, uintptr_t pc, uintptr_t sp,
                          uintptr_t bp, void **frames, int max)
{
    check_generation(cache, generation);
    struct unwind_memo *m = &cache->memos[unwind_memo_slot(pc, sp)];
    /* Only the header: the reads past m->reads are never looked at. */
    m->pc = 0;
    m->generation = generation;
    m->uses_bp = false;
    m->reads = 0;
    int n = walk(cache, pc, sp, bp, true, frames, max, m);
    if (n >= 0 && m->reads <= UNWIND_MEMO_READS) {
        m->pc = pc;
        m->sp = sp;
        m->bp = bp;
    }
    return n;
}

