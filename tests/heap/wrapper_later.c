/* A function named a wrapper while the program runs (memprof_wrappers, as
 * GDB's memprof-wrapper calls it): its blocks from then on are charged to
 * its caller's line, the ones before stay at its own. The function is the
 * thread's last allocation site when the wrappers change, and in the
 * thread's table of sites. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static void *kept[30];

/* Not a tail call: the block's site is in make_one. */
__attribute__((noinline)) void *make_one(void)
{
    void *p = malloc(40); /* LATER:site */
    __asm__ volatile("" : : "r"(p) : "memory");
    return p;
}

int main(void)
{
    int (*wrappers)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "memprof_wrappers");
    if (!wrappers) {
        fprintf(stderr, "wrapper_later: run me under memprof run --heap\n");
        return 1;
    }
    for (int i = 0; i < 10; i++)
        kept[i] = make_one();
    if (wrappers("make_one") != 0)
        return 1;
    for (int i = 10; i < 30; i++)
        kept[i] = make_one(); /* LATER:caller */
    return 0;
}
