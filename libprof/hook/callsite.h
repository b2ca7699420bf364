/* Caller-side hooking, the seeds' stage 1, for a function no GOT slot
 * reaches (a static one): every `call rel32` to it is found by decoding the
 * functions of its object from their symbols' starts (a real decoder, never
 * a byte scan), and its displacement is pointed at a stub within ±2 GB.
 * Restoring puts every original displacement back. */
#ifndef MEMPROF_HOOK_CALLSITE_H
#define MEMPROF_HOOK_CALLSITE_H
#include "../arch/x86_64/decode.h"
#include <stddef.h>
#include <stdint.h>

struct call_site {
    uintptr_t at;            /* the call instruction */
    int32_t original;        /* its displacement before patching */
};

struct callsite_patch {
    uintptr_t target;        /* the function called */
    size_t count;
    struct call_site *sites; /* ascending */
    size_t bytes;            /* of the sites' mapping */
    uintptr_t stub;          /* where the calls go while applied, else 0 */
};

/* Every call rel32 to `target` in `functions` (decoded from each start to
 * its end; a function whose bytes stop decoding is read up to there, one
 * not readable in memory is skipped). 0, or an errno (ENOMEM, or the memory
 * map's); out->count may be 0. Not for hooks. */
int callsite_find(const struct code_range *functions, size_t n, uintptr_t target, struct callsite_patch *out);
/* Point every call at `stub`: all or none. Each site is checked first: it
 * must still call `target`, `stub` must be in rel32 reach, and its 4-byte
 * displacement must sit within one cache line, so one store replaces it
 * and a thread running that code sees the old call or the new, never a
 * mix. `expected` (0: any) is the number of sites the caller counts on.
 * 0, or an errno: EEXIST (applied), ENOENT (count differs from expected, or
 * no site), EINVAL (a site changed), ERANGE (stub out of reach), EXDEV (a
 * displacement across a cache line while other threads run), or mprotect's. */
int callsite_apply(struct callsite_patch *p, uintptr_t stub, size_t expected);
/* Put back every original displacement (they must still point at the stub).
 * 0, or an errno. */
int callsite_restore(struct callsite_patch *p);
void callsite_free(struct callsite_patch *p);
#endif
