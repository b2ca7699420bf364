/* Writing pointer-sized slots in memory that may be read-only (full RELRO). */
#ifndef MEMPROF_HOOK_SLOT_H
#define MEMPROF_HOOK_SLOT_H
#include "../util/maps.h"
#include <stdint.h>

/* A pass of slot writes. A read-only page is made writable for its first
 * slot and given back the protection `maps` shows for it when the pass
 * moves to another page or ends: an object's GOT takes two mprotects, not
 * two per slot. */
struct slot_writer {
    const struct maps *maps;
    uintptr_t open_page;   /* made writable by this pass, or 0 */
    int open_prot;         /* its protection before */
};

void slot_writer_begin(struct slot_writer *w, const struct maps *maps);
/* Store `value` at `slot` with one atomic 8-byte write. 0 or an errno. */
int slot_writer_put(struct slot_writer *w, uintptr_t *slot, uintptr_t value);
/* The open page back to its protection. 0 or an errno. */
int slot_writer_end(struct slot_writer *w);
#endif
