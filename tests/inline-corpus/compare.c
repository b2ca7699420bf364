/* The parameter used only in a comparison. */
#include "corpus.h"
static obj *hint;
static long hint_hits;
static inline void release(obj *p)
{
    if (p == hint)
        hint_hits++;
    released++;
}
int main(int argc, char **argv)
{
    (void)argv;
    for (int i = 0; i < 3000; i++) {
        obj *o = newobj(i); /* SITE */
        if (i % 100 == 0)
            hint = o;
        if (i % (argc + 2) == 0)
            release(o);
    }
    print_live();
    return (int)(hint_hits & 1) * 0;
}
