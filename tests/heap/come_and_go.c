#define _GNU_SOURCE
/* Threads that come and go: 2000 threads (or argv[1]), two at a time, thread N named
 * cg-N. Each allocates ALLOCS blocks at one line and keeps one; thread N
 * also frees the block thread N-2 kept (gone by then) when N % 3 == 0; at
 * the end main frees those of threads N % 5 == 0. A thread's record goes to
 * a thread started after it ended, with the blocks it holds: the kept
 * blocks must stay each their own thread's, and memprof's memory must not
 * grow with the threads. Prints how many kept blocks live, then the name of
 * each thread that holds one; with "wait" (the last argument), then waits
 * for a signal. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_THREADS 10000
#define ALLOCS 40

static void *kept[MAX_THREADS];
static int freed[MAX_THREADS];

static void *worker(void *arg)
{
    int n = (int)(long)arg;
    char name[16];
    snprintf(name, sizeof name, "cg-%d", n);
    pthread_setname_np(pthread_self(), name);
    for (int i = 0; i < ALLOCS; i++) {
        char *p = malloc(24 + (size_t)i);   /* COME_AND_GO:kept */
        p[0] = 1;
        if (i == ALLOCS / 2)
            kept[n] = p;
        else
            free(p);
    }
    if (n % 3 == 0 && n >= 2 && !freed[n - 2]) {
        free(kept[n - 2]);
        freed[n - 2] = 1;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 0;
    threads = threads >= 2 && threads <= MAX_THREADS ? threads / 2 * 2 : 2000;
    for (int n = 0; n < threads; n += 2) {
        pthread_t a, b;
        if (pthread_create(&a, NULL, worker, (void *)(long)n) || pthread_create(&b, NULL, worker, (void *)(long)(n + 1)))
            return 1;
        pthread_join(a, NULL);
        pthread_join(b, NULL);
    }
    int live = 0;
    for (int n = 0; n < threads; n++) {
        if (n % 5 == 0 && !freed[n]) {
            free(kept[n]);
            freed[n] = 1;
        }
        live += !freed[n];
    }
    printf("live %d\n", live);
    for (int n = 0; n < threads; n++)
        if (!freed[n])
            printf("cg-%d\n", n);
    fflush(stdout);
    if (argc > 1 && strcmp(argv[argc - 1], "wait") == 0) {
        fputs("waiting\n", stderr);
        pause();
    }
    return 0;
}
