/* Allocates 10 MB at one line in 1 KiB blocks (or BLOCKS blocks of SIZE
 * bytes: ./spike BLOCKS SIZE) and frees them at once, then keeps 100 KB made
 * at another line: the heap's peak holds the first line's blocks and none of
 * the second's (at-peak.test). Nothing waits: a poll of the live total would
 * miss the peak. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define SPIKE_BLOCKS_MAX 100000
static char *spike[SPIKE_BLOCKS_MAX];
static char *kept[100];
int main(int argc, char **argv)
{
    int blocks = argc > 2 ? atoi(argv[1]) : 10000;
    size_t size = argc > 2 ? (size_t)atol(argv[2]) : 1000;
    if (blocks < 1 || blocks > SPIKE_BLOCKS_MAX || size < 1)
        return 2;
    for (int i = 0; i < blocks; i++) {
        spike[i] = malloc(size);   /* SPIKE */
        memset(spike[i], 1, size);
    }
    for (int i = 0; i < blocks; i++)
        free(spike[i]);
    for (int i = 0; i < 100; i++) {
        kept[i] = malloc(1000);   /* KEPT */
        memset(kept[i], 2, 1000);
    }
    printf("kept %d blocks\n", 100);
    return 0;
}
