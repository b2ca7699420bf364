/* An allocator of objects from a static arena whose bookkeeping is two
 * small functions GCC inlines at -O2: obj_born(o, size) when an object is
 * handed out, obj_died(o) when it goes back. memprof-hook --inline
 * obj_born ptr=o size=size with --inline obj_died free=o counts the live
 * objects per line (inline-hook.test): 100 of 48 bytes at SITE_A (300
 * made, two in three freed), 100 of 200 or 201 bytes at SITE_B. At -O2
 * `size` at SITE_B is no register but a DWARF expression of the loop
 * counter, computed by the hook's stub. */
#include <stdio.h>
#include <stdlib.h>

struct obj {
    struct obj *next;
    size_t size;
};
static struct obj arena[1024];
static struct obj *freelist;
static long live;
static int next_free;

/* -DBORN_OUT_OF_LINE: obj_born keeps a copy of its own at -O2, hooked at
 * its entry with the caller read from the return address. */
#ifdef BORN_OUT_OF_LINE
__attribute__((noinline))
#endif
static void obj_born(struct obj *o, size_t size)
{
    o->size = size;
    live++;
    __asm__ volatile("" ::: "memory");
}

static void obj_died(struct obj *o)
{
    o->next = freelist;
    freelist = o;
    live--;
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static struct obj *take(void)
{
    return &arena[next_free++];
}

__attribute__((noinline)) static void run(void)
{
    for (int i = 0; i < 300; i++) {
        struct obj *o = take();
        obj_born(o, 48);                /* SITE_A */
        if (i % 3)
            obj_died(o);
    }
    for (int i = 300; i < 400; i++)
        obj_born(take(), 200 + i % 2);  /* SITE_B */
}

int main(void)
{
    run();
    printf("live %ld\n", live);
    return 0;
}
