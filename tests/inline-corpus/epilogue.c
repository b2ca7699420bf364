/* Inlined into a loop the compiler unrolls or vectorizes: its copies in
 * the loop's body and in its epilogue (the count is no multiple of 4). */
#include "corpus.h"
static obj *freelist;
static inline void release(obj *p)
{
    p->next = freelist;
    freelist = p;
}
static obj *batch[4096];
int main(int argc, char **argv)
{
    (void)argv;
    int n = 1003 + argc;
    for (int i = 0; i < n; i++)
        batch[i] = newobj(i); /* SITE */
    for (int i = 0; i < n - 7; i++)
        release(batch[i]);
    released = n - 7;
    print_live();
    return freelist == NULL;
}
