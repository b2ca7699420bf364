/* The C heap benchmark: 16M malloc/free pairs of 16-271 bytes over 2
 * threads, 1% of blocks kept (PAIRS sets the total; KEEP=N keeps one block
 * in N, KEEP=0 none: what the kept blocks cost apart). With the argument
 * "strdup", each block is a strdup of a string of that length instead: an
 * allocation wrapper memprof looks through to its caller. It prints what it
 * kept with stdio at the end, as most programs print something: stdout's
 * buffer is a live block of libc's at exit, a row the report names from
 * libc's debug information. */
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static long pairs_per_thread, keep_every = 100;
static int through_strdup;
static char text[272];

static void *work(void *seed_arg)
{
    uint64_t seed = (uint64_t)(uintptr_t)seed_arg * 2654435761u + 1;
    long kept_count = keep_every ? pairs_per_thread / keep_every + 1 : 0, k = 0;
    void **kept = malloc((size_t)(kept_count + 1) * sizeof *kept);
    for (long i = 0; i < pairs_per_thread; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        size_t size = 16 + (size_t)(seed >> 56);
        void *p = through_strdup ? strdup(text + sizeof text - size) : malloc(size);
        if (keep_every && i % keep_every == 0 && k < kept_count)
            kept[k++] = p;
        else
            free(p);
    }
    return kept;
}

int main(int argc, char **argv)
{
    through_strdup = argc > 1 && strcmp(argv[1], "strdup") == 0;
    memset(text, 'x', sizeof text - 1);
    const char *env = getenv("PAIRS");
    pairs_per_thread = (env ? atol(env) : 16000000L) / 2;
    const char *keep = getenv("KEEP");
    if (keep && *keep)
        keep_every = atol(keep) > 0 ? atol(keep) : 0;   /* 0 or less: none kept */
    pthread_t t[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, work, (void *)(i + 1));
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("%ld pairs a thread, one block in %ld kept\n", pairs_per_thread, keep_every);
    return 0;
}
