/* A free whose own code is one `ret` (gcc -O2): an entry too short for a
 * jmp, refused by memprof-hook --inline with a reason, nothing patched
 * (inline-hook.test). */
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) void drop(void *o)
{
    __asm__ volatile("" ::"r"(o));
}
int main(void)
{
    void *p = malloc(16);
    drop(p);
    free(p);
    printf("done\n");
    return 0;
}
