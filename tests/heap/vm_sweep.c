/* Another VM of the seeds' kind, as a new user writes one (issue 51): a
 * one-line static add_freelist(obj *p) that stores p to a static free
 * list, inlined into a sweep loop and into main's set-up loop. clang -O2
 * unrolls the set-up loop and keeps no location for p in that copy: its
 * frees are of objects newobj never made, so with --partial (the other
 * copy hooked) the counts are still right. Prints the objects live at its
 * end: those newobj made that the sweep did not free. */
#include <stdio.h>
#include <stdlib.h>

typedef struct obj { long flags; struct obj *next; long value; } obj;
static obj *freelist;
static obj *objs;
static int nobj;

static inline void add_freelist(obj *p) { p->flags = 0; p->next = freelist; freelist = p; }

__attribute__((noinline)) static obj *newobj(long v)
{
    obj *o = freelist;
    if (o)
        freelist = o->next;
    else
        o = &objs[nobj++];
    o->flags = 1;
    o->value = v;
    return o;
}

__attribute__((noinline)) static int sweep(void)
{
    int freed = 0;
    for (int i = 0; i < nobj; i++)
        if (objs[i].flags == 1 && objs[i].value % 2 == 0) {
            add_freelist(&objs[i]);
            freed++;
        }
    return freed;
}

int main(void)
{
    objs = calloc(100000, sizeof(obj));
    for (int i = 0; i < 1000; i++)
        add_freelist(&objs[nobj++]);   /* the set-up: free objects never made */
    long sum = 0;
    int made = 0;
    for (int i = 0; i < 1500; i++, made++)
        sum += newobj(i)->value;   /* SITE */
    int freed = sweep();
    printf("%ld %d live\n", sum, made - freed);
    return 0;
}
