/* Three phases a timeline shows (timeline.test): 10 MB grows at line A,
 * 4 MB at line B, then A's blocks are freed; B's stay to the end. Each
 * step waits a millisecond, so a sampler 10 ms apart sees each phase. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
static void pause_ms(long ms) { nanosleep(&(struct timespec){ ms / 1000, (ms % 1000) * 1000000 }, NULL); }
static char *a[200], *b[200];
int main(void)
{
    for (int i = 0; i < 200; i++) {
        a[i] = malloc(50000);   /* A */
        memset(a[i], 1, 50000);
        pause_ms(1);
    }
    for (int i = 0; i < 200; i++) {
        b[i] = malloc(20000);   /* B */
        memset(b[i], 2, 20000);
        pause_ms(1);
    }
    for (int i = 0; i < 200; i++) {
        free(a[i]);
        pause_ms(1);
    }
    pause_ms(100);
    return 0;
}
