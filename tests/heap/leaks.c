#define _GNU_SOURCE
/* Known leaks at known lines for the heap tests. Each LEAK comment marks the
 * line whose call the report must name; the test reads the line numbers. */
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* volatile: the compiler may not drop an allocation whose block it can
 * prove is never used. */
void *volatile kept[4096];
static int nkept;

static __attribute__((noipa)) void leak_in_loop(int n)
{
    for (int i = 0; i < n; i++)
        kept[nkept++] = malloc(32); /* LEAK:loop */
}

static __attribute__((noipa)) void leak_recursively(int depth)
{
    kept[nkept++] = calloc(2, 24); /* LEAK:recursive */
    if (depth > 1)
        leak_recursively(depth - 1);
}

static __attribute__((noipa)) void realloc_chain(void)
{
    char *p = realloc(NULL, 10);     /* from NULL */
    p = realloc(p, 20);              /* maybe in place */
    p = realloc(p, 100000); /* LEAK:realloc */
    kept[nkept++] = p;
    char *q = malloc(5);
    q = realloc(q, 0);               /* to zero: freed */
    kept[nkept++] = q;
}

static __attribute__((noipa)) void aligned(void)
{
    void *a;
    if (posix_memalign(&a, 64, 128) == 0) /* LEAK:posix_memalign */
        kept[nkept++] = a;
    kept[nkept++] = aligned_alloc(64, 256); /* LEAK:aligned_alloc */
    free(memalign(32, 64));          /* freed: not reported */
}

static void *worker(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "leaks-worker");
    void *volatile mine[100];
    for (int i = 0; i < 10000; i++)
        free(malloc(16 + (size_t)(i % 256)));
    for (int i = 0; i < 100; i++)
        mine[i] = malloc(40); /* LEAK:thread */
    return mine[0] ? NULL : arg;     /* the blocks stay allocated */
}

/* Frees, in another thread, blocks the main thread made: not leaks. */
static void *free_handed(void *arg)
{
    void *volatile *blocks = arg;
    for (int i = 0; i < 500; i++)
        free(blocks[i]);
    return NULL;
}

int main(int argc, char **argv)
{
    static void *volatile handed[500];
    for (int i = 0; i < 500; i++)
        handed[i] = malloc(48);      /* freed by another thread: not reported */
    pthread_t freer;
    pthread_create(&freer, NULL, free_handed, (void *)handed);
    pthread_join(freer, NULL);

    leak_in_loop(100);
    leak_recursively(7);
    realloc_chain();
    aligned();
    free(NULL);
    for (int i = 0; i < 1000; i++)
        free(malloc(100));           /* balanced: not reported */
    pthread_t threads[8];
    for (int i = 0; i < 8; i++)
        pthread_create(&threads[i], NULL, worker, NULL);
    for (int i = 0; i < 8; i++)
        pthread_join(threads[i], NULL);
    if (argc > 1) {
        void *plugin = dlopen(argv[1], RTLD_NOW);
        void *(*leak)(void) = plugin ? (void *(*)(void))dlsym(plugin, "plugin_leak") : NULL;
        for (int i = 0; leak && i < 3; i++)
            kept[nkept++] = leak();
        if (!leak)
            fprintf(stderr, "cannot load %s\n", argv[1]);
        if (argc > 2 && plugin) {
            /* Another library where the first one was: hooked as new. */
            Dl_info first;
            dladdr((void *)leak, &first);
            dlclose(plugin);
            void *second = dlopen(argv[2], RTLD_NOW);
            leak = second ? (void *(*)(void))dlsym(second, "plugin_leak") : NULL;
            Dl_info again;
            if (leak && dladdr((void *)leak, &again))
                printf("second library at the first's address: %s\n", first.dli_fbase == again.dli_fbase ? "yes" : "no");
            for (int i = 0; leak && i < 2; i++)
                kept[nkept++] = leak();
        }
    }
    return 0;
}
