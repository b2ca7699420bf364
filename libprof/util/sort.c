#include "sort.h"
#include "pages.h"
#include <string.h>

static void swap(char *a, char *b, size_t size)
{
    char tmp[64];
    memcpy(tmp, a, size);
    memcpy(a, b, size);
    memcpy(b, tmp, size);
}

static void sift_down(char *base, size_t root, size_t n, size_t size,
                      int (*cmp)(const void *, const void *, void *), void *ctx)
{
    for (;;) {
        size_t child = 2 * root + 1;
        if (child >= n)
            return;
        if (child + 1 < n && cmp(base + child * size, base + (child + 1) * size, ctx) < 0)
            child++;
        if (cmp(base + root * size, base + child * size, ctx) >= 0)
            return;
        swap(base + root * size, base + child * size, size);
        root = child;
    }
}

static void heap_sort(char *b, size_t n, size_t size, int (*cmp)(const void *, const void *, void *), void *ctx)
{
    for (size_t i = n / 2; i-- > 0;)
        sift_down(b, i, n, size, cmp, ctx);
    for (size_t end = n; end-- > 1;) {
        swap(b, b + end * size, size);
        sift_down(b, 0, end, size, cmp, ctx);
    }
}

/* Runs of `width` elements of `from` merged pairwise into `to`. */
static void merge_pass(const char *from, char *to, size_t n, size_t width, size_t size,
                       int (*cmp)(const void *, const void *, void *), void *ctx)
{
    for (size_t lo = 0; lo < n; lo += 2 * width) {
        size_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
        size_t i = lo, j = mid, k = lo;
        while (i < mid && j < hi) {
            if (cmp(from + j * size, from + i * size, ctx) < 0)
                memcpy(to + k++ * size, from + j++ * size, size);
            else
                memcpy(to + k++ * size, from + i++ * size, size);
        }
        memcpy(to + k * size, from + i * size, (mid - i) * size);
        k += mid - i;
        memcpy(to + k * size, from + j * size, (hi - j) * size);
    }
}

/* Runs of 8 sorted in place by insertion, the merges' first width. */
static void insertion_runs(char *b, size_t n, size_t size, int (*cmp)(const void *, const void *, void *), void *ctx)
{
    for (size_t lo = 0; lo < n; lo += 8) {
        size_t hi = lo + 8 < n ? lo + 8 : n;
        for (size_t i = lo + 1; i < hi; i++)
            for (size_t j = i; j > lo && cmp(b + (j - 1) * size, b + j * size, ctx) > 0; j--)
                swap(b + (j - 1) * size, b + j * size, size);
    }
}

void sort_items(void *base, size_t n, size_t size, int (*cmp)(const void *a, const void *b, void *ctx), void *ctx)
{
    size_t bytes = n * size;
    char *spare = n > 64 ? pages_alloc(bytes) : NULL;
    if (!spare) {   /* few, or no memory for the merges: a heapsort in place */
        heap_sort(base, n, size, cmp, ctx);
        return;
    }
    char *from = base, *to = spare;
    insertion_runs(from, n, size, cmp, ctx);
    for (size_t width = 8; width < n; width *= 2) {
        merge_pass(from, to, n, width, size, cmp, ctx);
        char *t = from;
        from = to;
        to = t;
    }
    if (from != base)
        memcpy(base, from, bytes);
    pages_free(spare, bytes);
}
