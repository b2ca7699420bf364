/* Registration of generated code with GDB's JIT interface, so that GDB
 * names each stub and, with plugin/memprof-jit.so, unwinds through it.
 *
 * One code entry per trampoline pool region (GDB makes an objfile of each
 * entry: thousands of entries cost it seconds and hundreds of MB), replaced
 * by a new one whenever a stub is added to the region. The symfile format is
 * in jit_symfile.h and doc/jit-symfile.md. Not for hooks: it maps memory. */
#ifndef MEMPROF_HOOK_JIT_H
#define MEMPROF_HOOK_JIT_H
#include "jit_symfile.h"
#include <stddef.h>
#include <stdint.h>

/* Describe a stub of `size` bytes at `start`, in the region at `region`
 * (whose cookie is `cookie`: see jit_symfile.h), with its frame ranges (offsets from `start`, in order, covering it), and
 * register the region's new symfile unless held. The name is copied.
 * 0, or an errno (ENOMEM, EINVAL). */
int jit_add_stub(uintptr_t region, uint64_t cookie, uintptr_t start, size_t size, enum jit_stub_kind kind,
                 const char *name, const struct jit_symfile_range *ranges, size_t range_count);
/* The same for a stub that goes back into the middle of a function at
 * `resume` (JIT_RA_RESUME). */
int jit_add_resuming_stub(uintptr_t region, uint64_t cookie, uintptr_t start, size_t size, const char *name,
                          const struct jit_symfile_range *ranges, size_t range_count, uintptr_t resume);

/* Where the plugin finds the shadow stacks of return addresses. */
void jit_set_shadow_layout(const struct jit_symfile_header *layout);

/* Between hold and release (nested), changed regions are registered once,
 * at the release: making many stubs does not stop GDB at each. */
void jit_hold(void);
void jit_release(void);

/* Regions registered (for tests and status). */
size_t jit_registered_regions(void);
#endif
