/* A library's own hot malloc and free sites (tests/heap/sample_sites.c
 * loads it, calls hot(), and unloads it). */
#include <stdlib.h>

void hot(long n)
{
    for (long i = 0; i < n; i++) {
        char *p = malloc(100 + (size_t)(i % 200));
        p[0] = 1;
        free(p);
    }
}
