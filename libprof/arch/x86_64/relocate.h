/* Whole instructions moved from where they were to a stub (an emitter's
 * code), so that a patch can take their bytes: each copied with its
 * rip-relative operand re-aimed at the same address, and each relative
 * branch written again as a rel32 to the same target, or refused with a
 * reason. A patch is also refused when a branch elsewhere in the function
 * lands inside the bytes it takes. */
#ifndef MEMPROF_ARCH_X86_64_RELOCATE_H
#define MEMPROF_ARCH_X86_64_RELOCATE_H
#include "decode.h"
#include "emit.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct relocation {
    size_t moved;          /* bytes taken from the original: whole instructions, `need` or more */
    size_t count;          /* instructions */
    uintptr_t refused_at;  /* with an error: the instruction that could not be moved */
    const char *why;       /* with an error: why, in a few words */
};

/* Move the instructions at `pc` (their bytes at `code`, `avail` readable)
 * into `e` until `need` bytes are taken. 0, or -1 with `why` and
 * `refused_at` set (and nothing promised about what `e` holds). The stub
 * must then jump back to pc + moved; an instruction that ends the flow
 * (ret, jmp) is moved and the moving stops there, refused if short of
 * `need`. */
int relocate(struct emitter *e, uintptr_t pc, const uint8_t *code, size_t avail, size_t need, struct relocation *out);

/* Whether a relative branch of the code in `ranges` (the function, every
 * piece) lands in (start, start + length): the bytes a patch takes at
 * `start` must not be entered anywhere but at their first. *from is the
 * branch. Reads the code at the ranges' addresses. */
bool relocate_branch_into(const struct code_range *ranges, size_t n, uintptr_t start, size_t length, uintptr_t *from);
#endif
