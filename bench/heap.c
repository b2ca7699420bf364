/* The C heap benchmark: 10M malloc/free pairs of 16-271 bytes over 2
 * threads, 1% of blocks kept (PAIRS sets the total). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

static long pairs_per_thread;

static void *work(void *seed_arg)
{
    uint64_t seed = (uint64_t)(uintptr_t)seed_arg * 2654435761u + 1;
    long kept_count = pairs_per_thread / 100 + 1, k = 0;
    void **kept = malloc((size_t)kept_count * sizeof *kept);
    for (long i = 0; i < pairs_per_thread; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        void *p = malloc(16 + (size_t)(seed >> 56));
        if (i % 100 == 0 && k < kept_count)
            kept[k++] = p;
        else
            free(p);
    }
    return kept;
}

int main(void)
{
    const char *env = getenv("PAIRS");
    pairs_per_thread = (env ? atol(env) : 10000000L) / 2;
    pthread_t t[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, work, (void *)(i + 1));
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    return 0;
}
