/* The seeds' situation as a program of its own: a static allocator,
 * newobj(), that no GOT slot reaches, called from four lines (the counts
 * each makes are printed for the test to compare). Objects go back to a
 * static free list that newobj does not take from yet (every object has an
 * address of its own, so each stays in the report as made). For
 * heap-calls.test, built -O0 and -O2, stripped or not. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define SEEDS_ARENA 8192
#include "../seeds_vm.h"

static long made[4];

__attribute__((noinline, noclone)) static struct obj *newobj(long kind)
{
    return SEEDS_NEWOBJ(kind, 0);
}

/* Inlined at -O2. The barrier keeps one store per free, as in a VM whose
 * frees are separated by other work: without it, GCC keeps the list head
 * in a register across two frees of one iteration and stores it once, and
 * a hook on the stores sees one free for two. */
#ifdef ADD_FREELIST_ON_ONE_LINE   /* a helper written on one line: its line table has no second row */
static void add_freelist(struct obj *o) { SEEDS_ADD_FREELIST(o); __asm__ volatile("" ::: "memory"); }
#else
static void add_freelist(struct obj *o)
{
    SEEDS_ADD_FREELIST(o);
    __asm__ volatile("" ::: "memory");
}
#endif

__attribute__((noinline)) static long run(long n)
{
    long a = 1, b = 2, c = 3;
    for (long i = 0; i < n; i++) {
        struct obj *x = newobj(1);   /* SITE_A */
        made[0]++;
        a += x->value + i;
        if (i % 3 == 0) {
            struct obj *y = newobj(2);   /* SITE_B */
            made[1]++;
            b ^= y->value + a;
            add_freelist(y);
        }
        if (i % 7 == 0) {
            struct obj *z = newobj(3);   /* SITE_C */
            made[2]++;
            c += z->value * b;
            add_freelist(z);
        }
        add_freelist(x);
    }
    struct obj *last = newobj(4);   /* SITE_D */
    made[3]++;
    return a + b + c + last->value;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "stop") == 0)
        raise(SIGTRAP);   /* for GDB: memprof-hook here */
    long result = run(1000);
    printf("vm: result %ld made %ld %ld %ld %ld\n", result, made[0], made[1], made[2], made[3]);
    fflush(stdout);
    if (argc > 1 && strcmp(argv[1], "stop") == 0) {
        raise(SIGTRAP);   /* for GDB: memprof-info heap, memprof-unhook here */
        run(1000);        /* after memprof-unhook: not seen */
        raise(SIGTRAP);
    }
    return 0;
}
