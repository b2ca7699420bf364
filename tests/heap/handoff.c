/* Blocks handed between threads as fast as they can go, so that a block one
 * thread frees is soon handed out again to another: the heap tracer must
 * apply each free before the next allocation of the same address. At the
 * end every handed block is freed; only the LEAK line's blocks stay. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#define THREADS 4
#define SLOTS 64
#define ROUNDS 200000

static void *slots[SLOTS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
void *volatile kept[THREADS * 10];

static void *swapper(void *arg)
{
    uint64_t x = (uintptr_t)arg * 0x9E3779B97F4A7C15ull + 1;
    for (int i = 0; i < ROUNDS; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        void *mine = malloc(16 + x % 200);   /* HANDOFF:churn */
        pthread_mutex_lock(&lock);
        void *old = slots[x % SLOTS];
        slots[x % SLOTS] = mine;
        pthread_mutex_unlock(&lock);
        free(old);    /* most often another thread's block */
    }
    for (int i = 0; i < 10; i++)
        kept[(uintptr_t)arg * 10 + (uintptr_t)i] = malloc(24);   /* LEAK:handoff */
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, swapper, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < SLOTS; i++)
        free(slots[i]);
    return 0;
}
