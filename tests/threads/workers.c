/* The threads tests' program (threads.test, attach.test):
 *   workers loop N [GO_FILE]  wait for GO_FILE to exist (a watcher is ready),
 *                             then create and join N threads one by one;
 *                             each prints "worker TID" and mallocs 100 bytes
 *   workers server            three threads allocate for ever, leaking one
 *                             block in 100; main prints "tick N" every 20 ms
 *   workers leak              a block of 100 bytes, its address printed, then
 *                             stop_here() (a place for GDB to stop)  */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(long ms)
{
    struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&t, &t) != 0)
        ;
}

static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;

static void *one_worker(void *arg)
{
    char *volatile block = malloc(100);
    pthread_mutex_lock(&print_lock);
    printf("worker %d\n", (int)gettid());
    fflush(stdout);
    pthread_mutex_unlock(&print_lock);
    free((void *)block);
    return arg;
}

__attribute__((noinline)) static void spawn_and_join(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, one_worker, NULL) == 0)
        pthread_join(t, NULL);
}

static void *leaking_worker(void *arg)
{
    long id = (long)arg;
    for (unsigned long i = 0;; i++) {
        char *volatile p = malloc(64 + (size_t)id);
        if (i % 100 != 0)   /* one block in 100 is kept */
            free((void *)p);
        sleep_ms(1);
    }
    return NULL;
}

__attribute__((noinline)) void stop_here(void *block)
{
    __asm__ volatile("" : : "r"(block) : "memory");
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "loop") == 0) {
        int n = atoi(argv[2]);
        printf("workers: %d threads\n", n);   /* stdout's buffer: main's, not a worker's */
        fflush(stdout);
        for (int waited = 0; argc > 3 && access(argv[3], F_OK) != 0; waited++) {
            if (waited == 60000) {
                fprintf(stderr, "workers: %s never appeared\n", argv[3]);
                return 1;
            }
            sleep_ms(1);
        }
        for (int i = 0; i < n; i++)
            spawn_and_join();
        printf("workers: %d threads done\n", n);
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "server") == 0) {
        setvbuf(stdout, NULL, _IOLBF, 0);
        pthread_t t[3];
        for (long i = 0; i < 3; i++)
            pthread_create(&t[i], NULL, leaking_worker, (void *)i);
        for (unsigned long tick = 1;; tick++) {
            printf("tick %lu\n", tick);
            sleep_ms(20);
        }
    }
    if (argc == 2 && strcmp(argv[1], "leak") == 0) {
        char *block = malloc(100);
        printf("block %p\n", (void *)block);
        fflush(stdout);
        stop_here(block);
        return 0;
    }
    fprintf(stderr, "usage: workers loop N [GO_FILE] | server | leak\n");
    return 2;
}
