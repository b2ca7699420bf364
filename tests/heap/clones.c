/* A static allocator GCC clones for its constant arguments: at -O2 every
 * call goes to newobj.constprop.0, at -O3 to three clones, and no call to
 * newobj is left. memprof-hook --calls newobj ptr=ret finds the clones
 * and counts each line's objects (inline-hook.test): 100 at SITE_A, 50 at
 * SITE_B, 20 at SITE_C. */
#include <stdio.h>
#include <stdlib.h>

struct obj {
    long kind, value;
};
struct heap {
    long pad[8];
    struct obj *arena;
    int used;
};

__attribute__((noinline)) static struct obj *newobj(struct heap *h, long kind, long value)
{
    struct obj *o = &h->arena[h->used++ % 4096];
    o->kind = kind;
    o->value = value * 3 + kind;
    if (kind == 42) {
        o->value += h->pad[1];
        fprintf(stderr, "x");
    }
    return o;
}

int main(int argc, char **argv)
{
    (void)argv;
    static struct heap heap;
    heap.arena = calloc(4096, sizeof *heap.arena);
    long sum = 0;
    for (int i = 0; i < 100; i++)
        sum += newobj(&heap, 7, 3)->value;      /* SITE_A */
    for (int i = 0; i < 50; i++)
        sum += newobj(&heap, argc, i)->value;   /* SITE_B */
    for (int i = 0; i < 20; i++)
        sum += newobj(&heap, 9, 1)->value;      /* SITE_C */
    printf("sum %ld\n", sum);
    return 0;
}
