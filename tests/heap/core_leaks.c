/* Blocks kept at known lines by two threads, then a wait to be dumped
 * (gcore) and killed: core.test reads the same rows from the core as
 * memprof-info heap gave live. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void *kept[200];

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 30; i++)
        kept[100 + i] = malloc(333);   /* CORE:worker */
    for (;;)
        pause();
    return NULL;
}

int main(void)
{
    for (int i = 0; i < 100; i++)
        kept[i] = malloc(1000);   /* CORE:hundred */
    for (int i = 130; i < 137; i++)
        kept[i] = malloc(5000);   /* CORE:seven */
    void *gone[50];
    for (int i = 0; i < 50; i++)
        gone[i] = malloc(64);
    for (int i = 0; i < 50; i++)
        free(gone[i]);
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    sleep(1);
    fprintf(stderr, "waiting\n");
    for (;;)
        pause();
}
