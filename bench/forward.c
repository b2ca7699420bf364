/* The least any interposer costs: a preloaded malloc and free that only
 * forward to glibc's through a pointer, as a hooked GOT slot's replacement
 * jumps through memprof's `next_malloc`. heap-bench runs heap.c under it to
 * show which part of a mode's ratio is the interposition itself. */
#include <stddef.h>

extern void *__libc_malloc(size_t size);
extern void __libc_free(void *p);

/* volatile: a load and an indirect jump, as in memprof's hooks, not a direct
 * jump the compiler could make of a known target. */
static void *(*volatile next_malloc)(size_t) = __libc_malloc;
static void (*volatile next_free)(void *) = __libc_free;

void *malloc(size_t size)
{
    return next_malloc(size);
}

void free(void *p)
{
    next_free(p);
}
