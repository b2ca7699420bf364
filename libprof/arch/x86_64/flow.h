/* A function's control flow, read from its code: is some code reached from
 * the function's start on a path that does not pass a given instruction?
 * What tells a copy of an inlined function entered past its entry (GCC's
 * jump threading: the caller branches straight into the copy's later code)
 * from one whose code only its entry leads to. */
#ifndef MEMPROF_ARCH_X86_64_FLOW_H
#define MEMPROF_ARCH_X86_64_FLOW_H
#include "decode.h"

enum flow_result {
    FLOW_CLEAR,     /* no such code */
    FLOW_REACHES,   /* *at is such code */
    FLOW_UNKNOWN,   /* the walk could not follow every edge: an indirect jump, code that does not
                       decode or is not mapped, no memory */
};

/* Walk every path from `start` through the function's code (`function`:
 * its ranges; a call returns, a ret or a jump out of the ranges ends a
 * path) that passes none of the `barriers` (a copy's entries): is there an
 * instruction of `targets` (the copy's code) on such a path that has an
 * effect (writes memory, or calls) and is on a cycle that passes no
 * barrier? Such code runs again and again, in a loop, with no entry passed
 * between: calls unseen. Code of the copy run before its entry (loads GCC
 * hoists, stores before an entry_pc placed late) passes the entry before
 * it runs again; a store sunk past a loop runs once, on no cycle. Reads
 * /proc/self/maps and decodes: not for hooks. */
enum flow_result flow_effect_unguarded(const struct code_range *function, size_t nf, uintptr_t start,
                                       const uintptr_t *barriers, size_t nb, const struct code_range *targets,
                                       size_t nt, uintptr_t *at);
#endif
