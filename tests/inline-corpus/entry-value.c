/* The parameter used only in an assert compiled out (NDEBUG), the copy
 * inlined into a function that passes on its own argument after a call:
 * the register it came in is clobbered by then, and GCC describes the
 * parameter as that register's value at the function's entry
 * (DW_OP_entry_value), clang not at all. */
#define NDEBUG
#include <assert.h>
#include "corpus.h"
static long work_done;
__attribute__((noinline)) static void work(long v)
{
    work_done += v;
    __asm__ volatile("" ::: "memory");
}
static inline void release(obj *p)
{
    assert(p != NULL);
    released++;
}
__attribute__((noinline)) static void drop(obj *o, long v)
{
    work(v);
    release(o);
}
int main(int argc, char **argv)
{
    (void)argv;
    for (int i = 0; i < 3000; i++) {
        obj *o = newobj(i); /* SITE */
        if (i % (argc + 2))
            drop(o, i);
    }
    print_live();
    return work_done == 0;
}
