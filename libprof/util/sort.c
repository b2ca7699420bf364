#include "sort.h"
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

void sort_in_place(void *base, size_t n, size_t size,
                   int (*cmp)(const void *a, const void *b, void *ctx), void *ctx)
{
    char *b = base;
    for (size_t i = n / 2; i-- > 0;)
        sift_down(b, i, n, size, cmp, ctx);
    for (size_t end = n; end-- > 1;) {
        swap(b, b + end * size, size);
        sift_down(b, 0, end, size, cmp, ctx);
    }
}
