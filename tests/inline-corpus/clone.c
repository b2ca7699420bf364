/* Not inlined, and called with a constant: GCC makes a clone
 * (release.constprop.0) that the hook must find too. */
#include "corpus.h"
static obj *lists[4];
__attribute__((noinline)) static void release(obj *p, int list)
{
    p->next = lists[list];
    lists[list] = p;
    released++;
}
int main(int argc, char **argv)
{
    (void)argv;
    for (int i = 0; i < 3000; i++) {
        obj *o = newobj(i); /* SITE */
        if (i % (argc + 2) == 0)
            release(o, 2);
    }
    print_live();
    return lists[2] == NULL;
}
