/* Trampoline pools: executable memory for generated code, placed within
 * rel32 reach (±2 GB) of an address when asked, so that a `call rel32` or a
 * `jmp rel32` at that address can reach a stub.
 *
 * W^X: each region is one memfd mapped twice, read+execute where the code
 * runs and read+write elsewhere for writing it, so code is added while other
 * threads run the stubs already there, and no page is ever both writable and
 * executable. Regions are never unmapped: a thread could be inside a stub.
 * Debuggers can set breakpoints in the code (see pool.c). */
#ifndef MEMPROF_HOOK_POOL_H
#define MEMPROF_HOOK_POOL_H
#include <stddef.h>
#include <stdint.h>

#define POOL_REGION_BYTES ((size_t)64 << 10)
/* A region starts with these 8 bytes and a cookie of 8 more, never code:
 * debuggers tell a live region from stale addresses by them. */
#define POOL_REGION_MAGIC "memprofP"
#define POOL_REGION_HEADER 16

struct code_chunk {
    uint8_t *write;      /* where to write the code */
    uintptr_t exec;      /* where it runs */
    size_t size;
    uintptr_t region;    /* where its region runs (POOL_REGION_BYTES long) */
    uint64_t cookie;     /* the region's, after POOL_REGION_MAGIC */
};

/* `size` bytes (at most a region less its header, 16-byte aligned) of code within ±2 GB of
 * `near` minus `size` (anywhere when `near` is 0). 0, or an errno: ENOSPC
 * when no free address range is in reach, ENOMEM, EINVAL. Thread-safe; not
 * for hooks (it may map memory and read /proc/self/maps). */
int pool_reserve(uintptr_t near, size_t size, struct code_chunk *out);
/* After writing `len` bytes of code into a chunk, before running it: makes
 * sure it is there where it runs (a debugger's breakpoint may have left a
 * private copy of the page). 0, or an errno. */
int pool_publish(const struct code_chunk *c, size_t len);
/* Regions mapped so far (for memprof's own figures). */
size_t pool_regions(void);
#endif
