/* Writing one pointer-sized slot in memory that may be read-only (full RELRO). */
#ifndef MEMPROF_HOOK_SLOT_H
#define MEMPROF_HOOK_SLOT_H
#include "../util/maps.h"
#include <stdint.h>

/* Store `value` at `slot` with one atomic 8-byte write. If the page is not
 * writable it is made so for the write and given back the protection `maps`
 * shows for it. Returns 0 or an errno. */
int slot_write(const struct maps *maps, uintptr_t *slot, uintptr_t value);
#endif
