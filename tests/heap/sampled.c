/* Known live bytes at known lines, of sizes below, near and far above a
 * 64 KiB sampling interval, amid churn that is all freed; a second thread's
 * blocks half freed by the main thread. Deterministic: the exact report and
 * a sampled one of the same program can be compared row by row. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#define KEEP(n) static void *volatile kept_##n[300000]

KEEP(small);
KEEP(medium);
KEEP(mixed);
KEEP(large);
KEEP(thread);

static uint64_t state = 88172645463325252ull;
static uint64_t next(void)
{
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return state;
}

static void churn(int rounds)
{
    for (int i = 0; i < rounds; i++) {
        void *p = malloc(16 + next() % 512);   /* SITE:churn */
        free(p);
    }
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 40000; i++)
        kept_thread[i] = malloc(200);   /* SITE:thread */
    return NULL;
}

int main(void)
{
    for (int i = 0; i < 250000; i++) {
        kept_small[i] = malloc(48);   /* SITE:small */
        churn(2);
    }
    for (int i = 0; i < 20000; i++) {
        kept_medium[i] = malloc(1500);   /* SITE:medium */
        churn(4);
    }
    for (int i = 0; i < 30000; i++) {
        kept_mixed[i] = malloc(1 + next() % 8000);   /* SITE:mixed */
        churn(2);
    }
    for (int i = 0; i < 200; i++)
        kept_large[i] = calloc(1, 300000);   /* SITE:large */
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
    for (int i = 0; i < 40000; i += 2)   /* another thread's blocks */
        free(kept_thread[i]);
    for (int i = 0; i < 300000; i += 3)
        free(kept_small[i]);
    return 0;
}
