/* Sorting for reports made with the process stopped anywhere: glibc's qsort
 * may call malloc, so this is a merge sort over pages of its own (half the
 * comparisons of a heapsort), and a heapsort in place without them. */
#ifndef MEMPROF_UTIL_SORT_H
#define MEMPROF_UTIL_SORT_H
#include <stddef.h>
#include <stdint.h>

/* Sort `n` elements of `size` bytes (at most 64) so that cmp(a, b, ctx) <= 0
 * for each neighbouring pair. Stable only when memory was there for it:
 * callers order ties themselves. */
void sort_items(void *base, size_t n, size_t size,
                   int (*cmp)(const void *a, const void *b, void *ctx), void *ctx);

/* In `n` elements of `size` bytes sorted by a uint64_t key at the start of
 * each (an address range's start, a line row's address): the index of the
 * first element whose key is above `key` (n if none). No call, no malloc. */
static inline size_t sorted_first_above(const void *base, size_t n, size_t size, uint64_t key)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint64_t at;
        __builtin_memcpy(&at, (const char *)base + mid * size, sizeof at);
        if (at <= key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}
#endif
