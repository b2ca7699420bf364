/* Changing code while other threads may be running it: one store of 4 or 8
 * bytes that lies within a cache line (x86 makes it atomic: a core sees the
 * old bytes or the new, never a mix), with the page made writable only
 * meanwhile (it keeps its execute permission: threads run it), then every
 * thread made to serialize its instruction stream. */
#ifndef MEMPROF_HOOK_CODE_WRITE_H
#define MEMPROF_HOOK_CODE_WRITE_H
#include "../util/maps.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether `width` bytes at `at` lie within one cache line. */
bool code_write_atomic(uintptr_t at, unsigned width);
/* Store the low `width` (4 or 8) bytes of `value` at `at`, giving the page
 * back the protection `maps` shows. 0, or an errno (mprotect's). */
int code_write(const struct maps *maps, uintptr_t at, uint64_t value, unsigned width);
/* After a batch of writes: every thread of the process serializes. */
void code_write_done(void);
/* Ready for code_write_done, ahead of any write: the kernel registers a
 * process of one thread for its barrier at once, one of several only after
 * an RCU grace period, in which the caller sleeps (10-20 ms here, in the
 * middle of a sampled run's thread). Best called while single-threaded. */
void code_write_prepare(void);

/* A 5-byte jmp written over code at `at` (a store site, a function's
 * entry) in one 8-byte store: the 8 bytes, within one cache line and
 * starting at most 3 bytes before `at`, that hold it in *window. False when
 * no such 8 bytes exist. */
bool code_jmp_window(uintptr_t at, uintptr_t *window);
/* Those 8 bytes (`before`, as the code at `window` holds them) with a jmp
 * rel32 at `at` to `target`, then int3 up to `pad` bytes from `at` (the
 * rest of an instruction never run), as far as the window goes. */
uint64_t code_jmp_window_bytes(uintptr_t window, uint64_t before, uintptr_t at, uintptr_t target, size_t pad);

/* One change of code: `width` (4 or 8) bytes at `at`, from the bytes of
 * `before` to those of `after` (little-endian, as the code holds them). */
struct code_patch {
    uintptr_t at;
    uint64_t before, after;
    unsigned width;
};
/* Make every change, all or none: each place must hold its `before` bytes
 * (EINVAL) and lie within one cache line, unless the calling thread is the
 * process's only one (EXDEV), checked before anything is written; a write that fails (mprotect's errno) has the ones made undone.
 * Then every thread serializes. 0, or an errno. The transaction every code
 * patch goes through (caller-side calls, store sites). */
int code_patch_apply(const struct code_patch *patches, size_t count);
/* Undo them the same way: each place must hold its `after` bytes. */
int code_patch_undo(const struct code_patch *patches, size_t count);
#endif
