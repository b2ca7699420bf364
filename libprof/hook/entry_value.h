/* A parameter whose copy knows it only as the value a register had at the
 * entry of the function the copy is in (DW_OP_entry_value): a keeper stub
 * at that function's entry hands the register and its frame's CFA to
 * entry_value_keep, which keeps them for the thread; the copy's stub hands
 * its own CFA to entry_value_recall, which finds the value kept for that
 * frame and calls the hook's handler with it. What GDB reads from the
 * caller's DW_TAG_call_site_parameter, taken here at the entry itself, where
 * the register still holds it (a caller-saved one has no call-site value). */
#ifndef MEMPROF_HOOK_ENTRY_VALUE_H
#define MEMPROF_HOOK_ENTRY_VALUE_H
#include "entry_site.h"
#include <stdint.h>

/* At the entry of the function `key` (its address): `value`, for the frame
 * whose CFA is `cfa`. No malloc, no lock: a small stack per thread. */
void entry_value_keep(uint64_t key, uint64_t value, uint64_t cfa);
/* At a copy in the function `key`, in the frame whose CFA is `cfa`:
 * handler(id, the value kept, second, caller), or, when none was kept for
 * that frame (the thread's stack of values overflowed, a frame left by
 * longjmp), nothing but a count. */
void entry_value_recall(uint32_t id, uint64_t cfa, uint64_t second, uintptr_t caller, entry_handler_fn *handler,
                        uint64_t key);
/* How many calls found no value kept, in every thread. */
uint64_t entry_value_missed(void);
#endif
