/* What the heap test programs that count their own figures share: a site's
 * figures, libc's own free (a free memprof does not see), the figures'
 * file, and the stop where a test takes a core. */
#ifndef MEMPROF_TESTS_HEAP_FIGURES_H
#define MEMPROF_TESTS_HEAP_FIGURES_H
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Every figure memprof reports for a site, as the program counts it. */
struct figures {
    long count, allocs;
    long long bytes, peak;
};

static inline void figures_born(struct figures *f, size_t size)
{
    f->count++;
    f->allocs++;
    f->bytes += (long long)size;
    if (f->bytes > f->peak)
        f->peak = f->bytes;
}

static inline void figures_died(struct figures *f, size_t size)
{
    f->count--;
    f->bytes -= (long long)size;
}

/* A line "NAME count bytes peak allocs", the order of a report's row. */
static inline void figures_write(FILE *out, const char *name, const struct figures *f)
{
    fprintf(out, "%s %ld %lld %lld %ld\n", name, f->count, f->bytes, f->peak, f->allocs);
}

/* A function that allocates `size` bytes at its own call site, on the line
 * it is written on (not a tail call: the site is in it). */
#define SITE_FUNCTION(name, size)                                                     \
    __attribute__((noinline)) static void *name(void)                                \
    {                                                                                \
        void *p = malloc(size);                                                      \
        __asm__ volatile("" : : "r"(p) : "memory");                                  \
        return p;                                                                    \
    }

/* libc's free, past memprof's hook in the GOT; NULL when not found. */
static inline void (*unseen_free_function(void))(void *)
{
    return (void (*)(void *))dlsym(RTLD_NEXT, "free");
}

/* The figures' file, opened first with a buffer of its own: the program
 * allocates nothing for it after a stop. NULL on failure. */
static inline FILE *figures_open(const char *path)
{
    static char buffer[4096];
    FILE *out = fopen(path, "w");
    if (out && setvbuf(out, buffer, _IOFBF, sizeof buffer) != 0) {
        fclose(out);
        return NULL;
    }
    return out;
}

/* "waiting" on stderr, then wait to be killed (the test takes a core). */
static inline int wait_for_core(void)
{
    static const char waiting[] = "waiting\n";
    if (write(2, waiting, sizeof waiting - 1) < 0)
        return 2;
    for (;;)
        pause();
}
#endif
