/* What every program of the corpus shares: a pool of objects, newobj (not
 * inlined: `--calls newobj ptr=ret` counts each made), and the count the
 * program prints at its end, the objects made and not released, which the
 * report's row at the SITE line must match. */
#include <stdio.h>
#include <stdlib.h>

typedef struct obj { long flags; struct obj *next; long value; } obj;
#define POOL 4096
static obj pool[POOL];
static int used;
static long made, released;

__attribute__((noinline)) static obj *newobj(long v)
{
    obj *o = &pool[used++ % POOL];
    o->flags = 1;
    o->value = v;
    made++;
    return o;
}

static void print_live(void)
{
    printf("%ld live\n", made - released);
}
