/* Entry hooks on code that may be inlined (memprof-hook --inline): at each
 * copy's entry, the whole instructions under a `jmp rel32` are moved to a
 * stub (arch/x86_64/relocate.h) that first calls a handler with a
 * parameter's value, read where DWARF says it is at that entry
 * (elf/inline_entries.h), then runs the moved instructions and jumps back.
 * All copies are checked and given a stub before any is patched; each patch
 * is the jmp's 5 bytes written in one 8-byte store within a cache line, the
 * bytes after it left as they were; restoring puts the original back. */
#ifndef MEMPROF_HOOK_ENTRY_SITE_H
#define MEMPROF_HOOK_ENTRY_SITE_H
#include "../arch/x86_64/decode.h"
#include "../objfile/inline_entries.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* `value` and `second`: the parameters' values (second 0 when none was
 * asked for); `caller`: a return address into the code the copy was called
 * or inlined from. */
typedef void entry_handler_fn(uint32_t id, uint64_t value, uint64_t second, uintptr_t caller);

/* What a site's stub does: call the handler with the parameter; or, for a
 * parameter that is a register's value at its function's entry
 * (PARAM_ENTRY_VALUE, entry_value.h), keep that register at the function's
 * entry, or recall it at the copy (`where` is then the copy's CFA). */
enum entry_site_kind { SITE_CALLS_HANDLER, SITE_KEEPS_ENTRY_VALUE, SITE_RECALLS_ENTRY_VALUE };

struct entry_site {
    uintptr_t at;              /* the copy's entry (run-time address) */
    enum entry_site_kind kind;
    uint64_t key;              /* kept and recalled values: the function's entry */
    size_t moved;              /* the whole instructions the jmp covers */
    struct inline_entry where; /* the parameter's place there */
    struct inline_entry size;  /* the second's (the constant 0 when none) */
    struct inline_entry caller; /* the return address's (or, inlined, the entry + 1 as a constant) */
};

struct code_patch;
struct entry_patch {
    size_t count;
    struct entry_site *sites;
    struct code_patch *patches;   /* [count]: the 8 bytes at each site, before and after */
    size_t bytes, patch_bytes;
    int applied;
    /* With `partial`: the copies left out (a place that cannot be read
     * there...), and why, each "the copy at 0x...: reason", "; " between. */
    size_t left_out;
    char left_out_why[1024];
};

/* Check each copy (`entries`: run-time addresses, their function's ranges
 * too, for branches into the patch; `seconds`, NULL or one per entry: a
 * second parameter's place; `names`: the two parameters', for `why`) and
 * keep it. 0, or
 * an errno with a one-line `why` naming the copy: EINVAL (a place that
 * cannot be read there, an instruction that cannot be moved, a branch into
 * the bytes the patch takes: every such copy named, "; " between, and
 * "(--partial hooks the other N)"), ENOMEM. `frees`: the handler frees
 * the block at the parameter (a second free of it changes nothing), so a
 * copy a jump is threaded into past its entry is also hooked where the jump
 * lands; else such a copy is refused. With `partial`, the copies
 * refused so are left out (out->left_out says which and why), and EINVAL
 * only when no copy is left. */
int entry_sites_prepare(const struct inline_entry *entries, const struct inline_entry *seconds, size_t n,
                        const char *const names[2], bool partial, bool frees, struct entry_patch *out, char *why,
                        size_t why_size);
/* Patch every site, all or none: `handler` at each entry (a
 * jmp no 8 bytes within a cache line hold is written only by a thread
 * alone in its process, else EXDEV). The
 * stubs are registered for GDB as "memprof entry stub for NAME". 0 or an
 * errno (EEXIST, EINVAL: a site changed, ERANGE: a moved instruction's
 * target out of reach, or the pool's). */
int entry_sites_apply(struct entry_patch *p, uint32_t id, const char *name, entry_handler_fn *handler);
int entry_sites_restore(struct entry_patch *p);
void entry_sites_free(struct entry_patch *p);
#endif
