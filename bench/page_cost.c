/* What fresh memory costs here: 24 MiB (a million blocks' table) mapped
 * and populated (MADV_POPULATE_WRITE), in small pages or advised for
 * transparent huge pages, or written a page at a time (a fault each), three
 * times in one process (each time new memory, none given back). Prints
 * "small MS MS MS", "huge MS MS MS" or "touched MS MS MS".
 *   page_cost small|huge|touched */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "small") != 0 && strcmp(argv[1], "huge") != 0 &&
                      strcmp(argv[1], "touched") != 0)) {
        fprintf(stderr, "usage: page_cost small|huge|touched\n");
        return 2;
    }
    int huge = strcmp(argv[1], "huge") == 0, touched = strcmp(argv[1], "touched") == 0;
    size_t size = (size_t)24 << 20, align = (size_t)2 << 20;
    printf("%s", argv[1]);
    for (int i = 0; i < 3; i++) {
        char *raw = mmap(NULL, size + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (raw == MAP_FAILED)
            return 1;
        char *p = (char *)(((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1));
        double start = now_ms();
        if (huge)
            madvise(p, size, MADV_HUGEPAGE);
        if (touched || madvise(p, size, MADV_POPULATE_WRITE) != 0)
            for (size_t at = 0; at < size; at += 4096)
                p[at] = 1;
        printf(" %.2f", now_ms() - start);
    }
    printf("\n");
    return 0;
}
