/* Sampled call sites pointed at stubs (libprof/trace/heap_sample_sites.c):
 * a hot malloc site and a hot free site in four threads, a checkpoint where
 * GDB reads the code, a fork whose child goes on through the changed sites,
 * a library with hot sites loaded and unloaded (ARGV[1]), and blocks left
 * live at the hot site for the report. SITES_IN_TURN in the environment runs
 * the threads one at a time. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define KEPT 64
static const long rounds = 200000;
static void *kept[5][KEPT];

static __attribute__((noinline)) void churn(int who, unsigned seed)
{
    void **keep = kept[who];
    for (long i = 0; i < rounds; i++) {
        seed = seed * 1103515245u + 12345u;
        void *p = malloc(16 + (seed >> 20) % 256); /* SITE:malloc */
        memset(p, 1, 8);
        unsigned k = seed % KEPT;
        free(keep[k]); /* SITE:free */
        keep[k] = p;
    }
}

static void *worker(void *arg)
{
    churn((int)(intptr_t)arg, (unsigned)(intptr_t)arg * 7919u);
    return NULL;
}

__attribute__((noinline)) void checkpoint(void)
{
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
    /* SITES_IN_TURN: one worker after another, so that each thread's serial
     * (and so its sampling generator) is the same from run to run. */
    bool in_turn = getenv("SITES_IN_TURN") != NULL;
    pthread_t t[4];
    for (intptr_t i = 0; i < 4; i++) {
        pthread_create(&t[i], NULL, worker, (void *)(i + 1));
        if (in_turn)
            pthread_join(t[i], NULL);
    }
    for (int i = 0; !in_turn && i < 4; i++)
        pthread_join(t[i], NULL);
    checkpoint();
    pid_t child = fork();
    if (child == 0) {
        churn(0, 3);
        _exit(0);
    }
    int status;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return 3;
    if (argc > 1) {
        void *lib = dlopen(argv[1], RTLD_NOW);
        void (*hot)(long) = lib ? (void (*)(long))dlsym(lib, "hot") : NULL;
        if (!hot)
            return 4;
        hot(rounds * 2);
        dlclose(lib);
    }
    churn(0, 11);
    puts("done");
    return 0;
}
