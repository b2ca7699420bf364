/* The outputs tests' C program: one block of 10 MiB and N blocks of 10000
 * bytes kept, at two known sites, with a stop for GDB before and after the
 * small ones (checkpoint). */
#include <stdlib.h>
#include <string.h>

void *keep[100000];   /* global: the compiler must keep the mallocs */
int kept;

__attribute__((noinline)) void checkpoint(int n)
{
    __asm__ volatile("" : : "r"(n) : "memory");
}

__attribute__((noinline)) static void leak_big(void)
{
    keep[kept] = malloc(10 << 20);
    memset(keep[kept++], 1, 4096);
}

__attribute__((noinline)) static void leak_small(void)
{
    keep[kept] = malloc(10000);
    memset(keep[kept++], 1, 16);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 500;
    for (int i = 0; i < 100; i++)
        free(keep[kept] = malloc(64));   /* freed: in no report */
    leak_big();
    checkpoint(0);
    for (int i = 0; i < n && kept < 100000; i++)
        leak_small();
    checkpoint(n);
    return 0;
}
