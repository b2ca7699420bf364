/* A one-line function whose parameter is used only in a store. */
#include "corpus.h"
static obj *freelist;
static inline void release(obj *p) { p->next = freelist; freelist = p; released++; }
int main(int argc, char **argv)
{
    (void)argv;
    for (int i = 0; i < 3000; i++) {
        obj *o = newobj(i); /* SITE */
        if (i % (argc + 2) == 0)
            release(o);
    }
    print_live();
    return freelist == NULL;
}
