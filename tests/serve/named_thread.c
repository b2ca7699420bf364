/* The control for malloc_count.c: a thread named memprof-serve that calls
 * malloc and free 5 times each (10 calls counted). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>

static void *run(void *unused)
{
    (void)unused;
    pthread_setname_np(pthread_self(), "memprof-serve");
    for (int i = 0; i < 5; i++) {
        void *volatile p = malloc(100);
        free(p);
    }
    return NULL;
}

int main(void)
{
    pthread_t t;
    pthread_create(&t, NULL, run, NULL);
    pthread_join(t, NULL);
    return 0;
}
