/* Grows to 100 blocks of 512 KiB, holds them 800 ms, frees 90 of them,
 * says "shrunk" and waits to be killed (peak-report.test). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static char *held[100];
static void pause_ms(long ms) { nanosleep(&(struct timespec){ ms / 1000, (ms % 1000) * 1000000 }, NULL); }
int main(void)
{
    for (int i = 0; i < 100; i++) {
        held[i] = malloc(512 * 1024);   /* GROW */
        memset(held[i], 1, 512 * 1024);
        pause_ms(5);
    }
    pause_ms(800);
    for (int i = 0; i < 90; i++)
        free(held[i]);
    printf("shrunk\n");
    fflush(stdout);
    for (;;)
        pause();
}
