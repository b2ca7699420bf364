/* A program that keeps 100 blocks of 1000 bytes, then ends as its argument
 * says: "segv" (a fault), "abort", "wait" (until a signal comes), "pipe"
 * (writes to a closed pipe), else it returns. For signal-reports.test. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *kept[100];

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "";
    for (int i = 0; i < 100; i++)
        kept[i] = malloc(1000);   /* KEPT */
    printf("kept 100 blocks\n");
    fflush(stdout);
    if (strcmp(how, "segv") == 0)
        *(volatile int *)16 = 1;
    if (strcmp(how, "abort") == 0)
        abort();
    if (strcmp(how, "wait") == 0) {
        fprintf(stderr, "waiting\n");
        for (;;)
            pause();
    }
    return 0;
}
