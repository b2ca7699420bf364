/* Threads that keep many small blocks, as a server's caches and strings
 * do: two threads each make 1M blocks of 24 bytes and keep them, free
 * every other one, and make those again (shapes-bench's "dense"). Its
 * blocks lie 32 bytes apart, so memprof's table arrays for them are the
 * largest a region of glibc's heap has, hashed once its frees look them
 * up, and each thread's faults and mappings meet the other's. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define BLOCKS 1000000

static void *keep_and_replace(void *unused)
{
    void **kept = malloc(sizeof *kept * BLOCKS);
    if (!kept)
        return NULL;
    for (int i = 0; i < BLOCKS; i++)
        kept[i] = malloc(24);
    for (int i = 0; i < BLOCKS; i += 2)
        free(kept[i]);
    for (int i = 0; i < BLOCKS; i += 2)
        kept[i] = malloc(24);
    return unused ? NULL : kept;
}

int main(void)
{
    pthread_t t[2];
    void *kept[2] = { NULL, NULL };
    for (int i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, keep_and_replace, NULL) != 0)
            return 1;
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], &kept[i]);
    printf("%d blocks kept a thread\n", kept[0] && kept[1] ? BLOCKS : 0);
    return !kept[0] || !kept[1];
}
