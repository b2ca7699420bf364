/* Inlined into a function that is itself inlined into a loop. */
#include "corpus.h"
static obj *freelist;
static inline void release(obj *p)
{
    p->next = freelist;
    freelist = p;
    released++;
}
static inline void sweep_one(obj *p)
{
    if (p->value % 3 == 0)
        release(p);
}
int main(int argc, char **argv)
{
    (void)argv;
    for (int i = 0; i < 3000 + argc; i++) {
        obj *o = newobj(i); /* SITE */
        sweep_one(o);
    }
    print_live();
    return freelist == NULL;
}
