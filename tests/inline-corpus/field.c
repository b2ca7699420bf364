/* The parameter used only through a field: a freed object is marked. */
#include "corpus.h"
static inline void release(obj *p)
{
    p->flags = 0;
    released++;
}
int main(int argc, char **argv)
{
    (void)argv;
    long sum = 0;
    for (int i = 0; i < 3000; i++) {
        obj *o = newobj(i); /* SITE */
        sum += o->value;
        if (i % (argc + 2) == 0)
            release(o);
    }
    print_live();
    return sum == 0 && pool[0].flags;
}
