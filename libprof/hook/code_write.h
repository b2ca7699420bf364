/* Changing code while other threads may be running it: one store of 4 or 8
 * bytes that lies within a cache line (x86 makes it atomic: a core sees the
 * old bytes or the new, never a mix), with the page made writable only
 * meanwhile (it keeps its execute permission: threads run it), then every
 * thread made to serialize its instruction stream. */
#ifndef MEMPROF_HOOK_CODE_WRITE_H
#define MEMPROF_HOOK_CODE_WRITE_H
#include "../util/maps.h"
#include <stdbool.h>
#include <stdint.h>

/* Whether `width` bytes at `at` lie within one cache line. */
bool code_write_atomic(uintptr_t at, unsigned width);
/* Store the low `width` (4 or 8) bytes of `value` at `at`, giving the page
 * back the protection `maps` shows. 0, or an errno (mprotect's). */
int code_write(const struct maps *maps, uintptr_t at, uint64_t value, unsigned width);
/* After a batch of writes: every thread of the process serializes. */
void code_write_done(void);
#endif
