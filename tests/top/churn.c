/* Tables that change all the time: 4 threads, each making and freeing
 * blocks at one site, holding at most HELD of them at once (the sum is at
 * most 4 * HELD), in bursts that make its tables grow and drain, until
 * stdin ends. */
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#define HELD 20000
static volatile int stopping;

__attribute__((noinline)) static void *churn_block(size_t n)
{
    return malloc(n); /* CHURN */
}

static void *churn(void *seed)
{
    static __thread void *held[HELD];
    unsigned r = (unsigned)(size_t)seed;
    while (!stopping) {
        int n = (int)((r = r * 1103515245u + 12345u) % HELD);
        for (int i = 0; i < n; i++)
            held[i] = churn_block(16 + i % 64);
        for (int i = 0; i < n; i++)
            free(held[i]);
    }
    return NULL;
}

int main(void)
{
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, churn, (void *)(size_t)(i + 1));
    char c;
    struct pollfd in = { .fd = 0, .events = POLLIN };
    while (!(poll(&in, 1, 100) == 1 && read(0, &c, 1) <= 0))
        ;
    stopping = 1;
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    return 0;
}
