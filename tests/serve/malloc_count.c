/* Preloaded after memprof's runtime: counts the calls to the allocator made
 * on the thread named memprof-serve (the thread must make none), and says
 * how many at exit, on stderr. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static unsigned long serve_calls;

static void count_if_serving(void)
{
    char name[16] = "";
    prctl(PR_GET_NAME, name);
    if (strcmp(name, "memprof-serve") == 0)
        __atomic_add_fetch(&serve_calls, 1, __ATOMIC_RELAXED);
}

/* dlsym may allocate before the real one is known: from this buffer. */
static char early[4096];
static size_t early_used;
static int resolving;

static void *early_alloc(size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (early_used + n > sizeof early)
        return NULL;
    void *p = early + early_used;
    early_used += n;
    return p;
}

typedef void *malloc_fn(size_t);
typedef void *calloc_fn(size_t, size_t);
typedef void *realloc_fn(void *, size_t);
typedef void free_fn(void *);

#define REAL(name)                                              \
    static name##_fn *real_##name;                              \
    if (!real_##name) {                                         \
        resolving = 1;                                          \
        real_##name = (name##_fn *)dlsym(RTLD_NEXT, #name);     \
        resolving = 0;                                          \
    }

void *malloc(size_t n)
{
    if (resolving)
        return early_alloc(n);
    REAL(malloc);
    count_if_serving();
    return real_malloc(n);
}

void *calloc(size_t k, size_t n)
{
    if (resolving)
        return early_alloc(k * n);   /* zeroed: static storage */
    REAL(calloc);
    count_if_serving();
    return real_calloc(k, n);
}

void *realloc(void *p, size_t n)
{
    REAL(realloc);
    count_if_serving();
    return real_realloc(p, n);
}

void free(void *p)
{
    if ((char *)p >= early && (char *)p < early + sizeof early)
        return;
    REAL(free);
    count_if_serving();
    real_free(p);
}

__attribute__((destructor)) static void say_count(void)
{
    char line[64] = "allocator calls on memprof-serve: ";
    size_t len = strlen(line);
    unsigned long n = serve_calls;
    char digits[24];
    int d = 0;
    do
        digits[d++] = (char)('0' + n % 10);
    while (n /= 10);
    while (d)
        line[len++] = digits[--d];
    line[len++] = '\n';
    write(2, line, len);
}
