/* Threads whose blocks keep apart, and two that do not, for the exit
 * report read at rest from the threads' own records (heap_report.c,
 * threads_apart). Writes the program's own figures of each site to FILE:
 * "NAME count bytes peak allocs" (figures.h; heap-threads.test).
 *
 *   apart FILE   two threads, each in an arena of its own, make blocks at
 *                a site of their own and free half of them, both alive
 *                until both are done: the records stand alone.
 *   young FILE   one thread makes a block and frees it unseen (libc's free
 *                called directly); another, while the first waits, makes a
 *                block at the same address (one arena, no per-thread cache:
 *                the test runs it with MALLOC_ARENA_MAX=1 and glibc's
 *                tcache off). Both blocks are in their threads' young
 *                slots: the first's record still counts its block, which
 *                only the block-by-block reading drops (a free memprof
 *                numbers comes between, so the second block is the later). */
#include "figures.h"
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define BLOCKS 20000
#define SIZE 48

SITE_FUNCTION(make_first, SIZE)    /* APART:first */
SITE_FUNCTION(make_second, SIZE + 1)   /* APART:second (not the same code: not folded into one) */

static struct figures first, second;
static pthread_barrier_t both;
static void *volatile taken;
/* libc's own, looked up before the threads start (dlsym allocates). */
static void (*unseen_free)(void *);
static void *(*unseen_malloc)(size_t);

static void *keep_half(void *arg)
{
    bool is_first = arg != NULL;
    struct figures *f = is_first ? &first : &second;
    size_t size = is_first ? SIZE : SIZE + 1;
    static void *blocks[2][BLOCKS];
    void **mine = blocks[is_first];
    for (int i = 0; i < BLOCKS; i++) {
        mine[i] = is_first ? make_first() : make_second();
        figures_born(f, size);
    }
    for (int i = 0; i < BLOCKS; i += 2) {
        free(mine[i]);
        figures_died(f, size);
    }
    pthread_barrier_wait(&both);   /* neither exits (and gives up its record) before the other is done */
    return NULL;
}

static void *make_and_lose(void *arg)
{
    (void)arg;
    void *p = make_first();
    figures_born(&first, SIZE);
    /* A free memprof numbers (of a block it did not see made, mapped on its
     * own, where no thread holds blocks): the block made next is later than
     * this one by its number too. Before the unseen free: a request this
     * large would first move the freed chunk out of its bin. */
    free(unseen_malloc(1 << 20));
    unseen_free(p);
    figures_died(&first, SIZE);
    taken = p;
    pthread_barrier_wait(&both);   /* the other makes its block now */
    pthread_barrier_wait(&both);
    return NULL;
}

static void *make_again(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&both);
    void *p = make_second();   /* 49 bytes: the same chunk size as 48 */
    figures_born(&second, SIZE + 1);
    int same = p == taken;
    pthread_barrier_wait(&both);
    return (void *)(intptr_t)same;
}

int main(int argc, char **argv)
{
    unseen_free = unseen_free_function();
    unseen_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
    if (argc < 3 || !unseen_free || !unseen_malloc)
        return 2;
    bool young = strcmp(argv[1], "young") == 0;
    FILE *out = figures_open(argv[2]);
    if (!out)
        return 2;
    pthread_barrier_init(&both, NULL, 2);
    pthread_t t[2];
    void *same = NULL;
    pthread_create(&t[0], NULL, young ? make_and_lose : keep_half, (void *)1);
    pthread_create(&t[1], NULL, young ? make_again : keep_half, NULL);
    pthread_join(t[0], NULL);
    pthread_join(t[1], &same);
    figures_write(out, "first", &first);
    figures_write(out, "second", &second);
    if (young)
        fprintf(out, "same %d\n", same != NULL);
    fclose(out);
    return 0;
}
