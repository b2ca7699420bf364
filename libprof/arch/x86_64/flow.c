/* A function's control flow, read from its code (see flow.h). */
#include "flow.h"
#include "../../util/maps.h"
#include "../../util/pages.h"
#include <string.h>

/* One walk over the instructions of `region` from a start: a bit per byte
 * of the region seen, and the instructions still to visit. */
struct walk {
    const struct code_range *region;
    size_t nr;
    const uintptr_t *barriers;
    size_t nb;
    uint8_t *seen;
    size_t seen_bytes;
    uintptr_t *pending;
    size_t pending_count, pending_bytes;
    bool no_memory;
};

static bool find(const struct code_range *r, size_t n, uintptr_t pc, size_t *bit, uintptr_t *end)
{
    size_t base = 0;
    for (size_t i = 0; i < n; base += r[i].size, i++)
        if (r[i].start <= pc && pc < r[i].start + r[i].size) {
            if (bit)
                *bit = base + (pc - r[i].start);
            if (end)
                *end = r[i].start + r[i].size;
            return true;
        }
    return false;
}

static bool is_barrier(const struct walk *w, uintptr_t pc)
{
    for (size_t i = 0; i < w->nb; i++)
        if (w->barriers[i] == pc)
            return true;
    return false;
}

static bool walk_begin(struct walk *w, const struct code_range *region, size_t nr, const uintptr_t *barriers,
                       size_t nb)
{
    size_t total = 0;
    for (size_t i = 0; i < nr; i++)
        total += region[i].size;
    *w = (struct walk){ .region = region, .nr = nr, .barriers = barriers, .nb = nb, .seen_bytes = total / 8 + 1 };
    return (w->seen = pages_alloc(w->seen_bytes)) != NULL;
}

static void walk_end(struct walk *w)
{
    pages_free(w->seen, w->seen_bytes);
    pages_free(w->pending, w->pending_bytes);
}

/* `pc` (in the region, not a barrier) to be visited, once. */
static void push(struct walk *w, uintptr_t pc)
{
    size_t bit;
    if (is_barrier(w, pc) || !find(w->region, w->nr, pc, &bit, NULL) || (w->seen[bit / 8] & (1u << (bit % 8))))
        return;
    w->seen[bit / 8] |= (uint8_t)(1u << (bit % 8));
    size_t need = (w->pending_count + 1) * sizeof *w->pending;
    if (!pages_grow((void **)&w->pending, &w->pending_bytes, need, 4096)) {
        w->no_memory = true;
        return;
    }
    w->pending[w->pending_count++] = pc;
}

/* Where the instruction at `pc` (in the region) may go next: up to two
 * places, *count of them (none: it returns). False when it does not decode
 * or jumps indirectly. */
static bool successors(const struct walk *w, uintptr_t pc, uintptr_t next[2], unsigned *count)
{
    uintptr_t end = pc;
    find(w->region, w->nr, pc, NULL, &end);
    struct insn in;
    if (!decode_insn((const void *)pc, end - pc, pc, &in) || in.kind == INSN_JMP_INDIRECT)
        return false;   /* a switch's table: where it goes is not in the code */
    *count = 0;
    if (in.kind == INSN_JMP_REL32 || in.kind == INSN_BRANCH_REL)
        next[(*count)++] = in.target;
    if (in.kind != INSN_JMP_REL32 && in.kind != INSN_RET && !(in.kind == INSN_BRANCH_REL && in.is_jmp8))
        next[(*count)++] = pc + in.length;
    return true;
}

/* Whether a walk from `from`'s successors comes back to `from` without
 * passing a barrier: `from` is on a cycle that avoids them. */
static enum flow_result cycles_back(struct walk *w, uintptr_t from)
{
    uintptr_t next[2];
    unsigned count;
    if (!successors(w, from, next, &count))
        return FLOW_UNKNOWN;
    for (unsigned i = 0; i < count; i++)
        push(w, next[i]);
    while (w->pending_count && !w->no_memory) {
        uintptr_t pc = w->pending[--w->pending_count];
        if (pc == from)
            return FLOW_REACHES;
        if (!successors(w, pc, next, &count))
            return FLOW_UNKNOWN;
        for (unsigned i = 0; i < count; i++)
            push(w, next[i]);
    }
    return w->no_memory ? FLOW_UNKNOWN : FLOW_CLEAR;
}

enum flow_result flow_effect_unguarded(const struct code_range *function, size_t nf, uintptr_t start,
                                       const uintptr_t *barriers, size_t nb, const struct code_range *targets,
                                       size_t nt, uintptr_t *at)
{
    struct maps maps;
    if (nf == 0 || maps_load(&maps) != 0)
        return FLOW_UNKNOWN;
    bool readable = true;
    for (size_t i = 0; i < nf; i++)
        readable &= maps_readable(&maps, function[i].start, function[i].size);
    maps_release(&maps);
    struct walk w;
    if (!readable || !walk_begin(&w, function, nf, barriers, nb))
        return FLOW_UNKNOWN;
    enum flow_result result = FLOW_CLEAR;
    push(&w, start);
    while (result == FLOW_CLEAR && w.pending_count && !w.no_memory) {
        uintptr_t pc = w.pending[--w.pending_count], end = pc;
        uintptr_t next[2];
        unsigned count;
        if (!successors(&w, pc, next, &count)) {
            result = FLOW_UNKNOWN;
            break;
        }
        find(function, nf, pc, NULL, &end);
        if (find(targets, nt, pc, NULL, NULL) && decode_has_effect((const void *)pc, end - pc)) {
            struct walk again;
            if (!walk_begin(&again, function, nf, barriers, nb)) {
                result = FLOW_UNKNOWN;
                break;
            }
            result = cycles_back(&again, pc);
            walk_end(&again);
            if (result == FLOW_REACHES)
                *at = pc;
        }
        for (unsigned i = 0; result == FLOW_CLEAR && i < count; i++)
            push(&w, next[i]);
    }
    if (w.no_memory)
        result = FLOW_UNKNOWN;
    walk_end(&w);
    return result;
}
