/* Allocators memprof does not know, named by the user (memprof-hook in GDB,
 * memprof_hook() in C), whose blocks go into the C heap report. */
#ifndef MEMPROF_TRACE_HEAP_CUSTOM_H
#define MEMPROF_TRACE_HEAP_CUSTOM_H
#include "../../memprof.h"
#include "../../util/out.h"
#include <stddef.h>

/* Hook the function `spec` names:
 *   "FUNCTION size=argN ptr=ret"    an allocator: a block of argument N's
 *                                   bytes at the address it returns
 *   "FUNCTION ptr=argN"             its free: the block at argument N
 *   "FUNCTION ptr=argN size=argM"   a block given to it at argument N
 *   "--calls FUNCTION ptr=ret [size=argN]"
 *                                   every call rel32 of FUNCTION in its
 *                                   object rewritten (a static function,
 *                                   found in the symbol table on disk)
 * (arguments counted from 0, the first six). FUNCTION may be an address
 * ("0x..."), where an exported function starts. Starts the heap tracer if it
 * is not running. A one-line message for the user in `message`. Not for
 * hooks: it maps memory and reads /proc/self/maps. */
enum memprof_status heap_custom_hook(const char *spec, char *message, size_t message_size);
/* Remove every hook: GOT slots, rewritten calls and patched stores get back
 * their bytes exactly (stubs stay: a thread may be inside one). Blocks
 * recorded stay in the report. */
enum memprof_status heap_custom_unhook_all(char *message, size_t message_size);
/* One line per hook in place, "  hook NAME (how)"; the number of them, or
 * -1 when a hook is being changed right now. */
int heap_custom_describe(struct out *o);
/* A report's "# warning: " line for each --inline hook with copies left
 * out (--partial): which, and why. Nothing while the hooks are busy. */
void heap_custom_warnings(struct out *o);
#endif
