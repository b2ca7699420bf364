/* Sorting for reports made with the process stopped anywhere: glibc's qsort
 * may call malloc, so this is a heapsort, in place and allocation-free. */
#ifndef MEMPROF_UTIL_SORT_H
#define MEMPROF_UTIL_SORT_H
#include <stddef.h>

/* Sort `n` elements of `size` bytes (at most 64) so that cmp(a, b, ctx) <= 0
 * for each neighbouring pair. Not stable. */
void sort_in_place(void *base, size_t n, size_t size,
                   int (*cmp)(const void *a, const void *b, void *ctx), void *ctx);
#endif
