/* Blocks allocated for the program by wrappers (aarch64-runtime.test): libc's
 * strdup (a built-in wrapper) and the program's own xmalloc (named with
 * MEMPROF_WRAPPERS); each row must be charged to the wrapper's caller. */
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) void *xmalloc(size_t n)
{
    void *p = malloc(n);
    if (!p)
        abort();
    return p;
}

__attribute__((noinline)) static char *copy_name(const char *s)
{
    return strdup(s);
}

/* Kept: GCC drops an allocation whose block is never used. */
void *volatile kept[50];

int main(void)
{
    for (int i = 0; i < 30; i++)
        kept[i] = copy_name("twenty-three bytes long");   /* CHARGED:strdup (copy_name tail-calls it) */
    for (int i = 0; i < 20; i++)
        kept[30 + i] = xmalloc(48);   /* CHARGED:xmalloc */
    return 0;
}
