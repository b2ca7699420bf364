/* A server's heap, as memprof top finds it: a large one held since the
 * start (KEPT blocks), and a worker whose requests each make a few dozen
 * blocks, keep some in a ring of RING (the oldest freed) and free the rest,
 * across many regions of the C heap: its tables' arrays are replaced dozens
 * of times a second, while the whole heap takes a reader a good part of a
 * second. Runs until stdin ends; prints the requests served. */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define KEPT 300000
#define RING 50000
#define PER_REQUEST 40

static volatile int stopping;
static unsigned long served;

__attribute__((noinline)) static void *kept_block(size_t n)
{
    return malloc(n); /* KEPT */
}

__attribute__((noinline)) static void *request_block(size_t n)
{
    return malloc(n); /* REQUEST */
}

static void *worker(void *unused)
{
    (void)unused;
    static void *ring[RING], *passing[PER_REQUEST];
    unsigned r = 12345, next = 0;
    while (!stopping) {
        for (int i = 0; i < PER_REQUEST; i++)
            passing[i] = request_block(16 + (r = r * 1103515245u + 12345u) % 2000);
        for (int i = 0; i < PER_REQUEST; i += 8) {   /* a few kept: the oldest goes */
            free(ring[next]);
            ring[next] = passing[i];
            passing[i] = NULL;
            next = (next + 1) % RING;
        }
        for (int i = 0; i < PER_REQUEST; i++)
            free(passing[i]);
        __atomic_add_fetch(&served, 1, __ATOMIC_RELAXED);
    }
    for (int i = 0; i < RING; i++)
        free(ring[i]);
    return NULL;
}

int main(void)
{
    static void *kept[KEPT];
    for (int i = 0; i < KEPT; i++)
        kept[i] = kept_block(24 + i % 200);
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    puts("ready");
    fflush(stdout);
    char c;
    struct pollfd in = { .fd = 0, .events = POLLIN };
    while (!(poll(&in, 1, 100) == 1 && read(0, &c, 1) <= 0))
        ;
    stopping = 1;
    pthread_join(t, NULL);
    printf("served %lu\n", served);
    for (int i = 0; i < KEPT; i++)
        free(kept[i]);
    return 0;
}
