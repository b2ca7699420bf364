/* Allocates 10 MB at one line in 1 KiB blocks and frees them at once, then
 * keeps 100 KB made at another line: the heap's peak holds the first line's
 * blocks and none of the second's (at-peak.test). Nothing waits: a poll of
 * the live total would miss the peak. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define SPIKE_BLOCKS 10000
static char *spike[SPIKE_BLOCKS];
static char *kept[100];
int main(void)
{
    for (int i = 0; i < SPIKE_BLOCKS; i++) {
        spike[i] = malloc(1000);   /* SPIKE */
        memset(spike[i], 1, 1000);
    }
    for (int i = 0; i < SPIKE_BLOCKS; i++)
        free(spike[i]);
    for (int i = 0; i < 100; i++) {
        kept[i] = malloc(1000);   /* KEPT */
        memset(kept[i], 2, 1000);
    }
    printf("kept %d blocks\n", 100);
    return 0;
}
