/* Inline-site hooking, the seeds' stage 2: the instructions that store a
 * register to a given static variable (`mov %reg, VAR(%rip)`), inside given
 * code (a function's copy, or its inlined instances), each replaced by a
 * `jmp rel32` to a stub that replays the store and calls a handler with the
 * stored value. All sites are checked before any is patched, and each patch
 * is one 8-byte store, within a cache line, that holds the jmp (the rest of
 * a longer instruction is never run); restoring puts the original bytes
 * back. */
#ifndef MEMPROF_HOOK_STORE_SITE_H
#define MEMPROF_HOOK_STORE_SITE_H
#include "../arch/x86_64/decode.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef void store_handler_fn(uint32_t id, uint64_t value);

struct store_site {
    uintptr_t at;            /* the store instruction */
    uint8_t length, reg;     /* its length; the register stored (0-15) */
    bool immediate;          /* a constant stored (imm), not a register */
    int32_t imm;
    uintptr_t window;        /* the 8 bytes one patch replaces: they hold the jmp at `at` */
    uint8_t original[8];     /* those 8 bytes before patching */
    uint64_t patched;        /* and while patched */
};

struct store_patch {
    uintptr_t variable;
    size_t count;
    struct store_site *sites;
    size_t bytes;            /* of the sites' mapping */
    int applied;
};

/* Every 8-byte store to `variable` in `code`, of a general register or of a
 * constant. 0, or an errno (ENOMEM, or the memory map's); out->count may be
 * 0. */
int store_sites_find(const struct code_range *code, size_t n, uintptr_t variable, struct store_patch *out);
/* Patch every site: `handler(id, value)` after each store. All or none:
 * `expected` (0: any) must be the count, and 8 bytes that cover each site
 * must lie in one cache line unless the calling thread is alone in its
 * process. The stubs are registered for GDB as "memprof store stub
 * for NAME". 0, or an errno: EEXIST, ENOENT (the count), EXDEV (a site
 * across a cache line, other threads running), EINVAL (a site changed), or one of the pool's. */
int store_sites_apply(struct store_patch *p, uint32_t id, const char *name, store_handler_fn *handler,
                      size_t expected);
/* The original bytes back (a thread inside a stub goes back to code that is
 * the same). 0, or an errno. */
int store_sites_restore(struct store_patch *p);
void store_sites_free(struct store_patch *p);
#endif
