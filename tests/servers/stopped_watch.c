/* servers.test's watch on how long a process is held stopped: polls
 * /proc/PID/stat every 2 ms, and when told to stop (SIGTERM) or when the
 * process is gone prints the longest time it spent in a row stopped by a
 * tracer (state t), and how many times it was stopped. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t done;
static void on_term(int sig) { (void)sig; done = 1; }

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    char path[64], line[1024];
    snprintf(path, sizeof path, "/proc/%s/stat", argv[1]);
    signal(SIGTERM, on_term);
    double since = -1, longest = 0;
    long stops = 0;
    while (!done) {
        FILE *f = fopen(path, "r");
        if (!f || !fgets(line, sizeof line, f)) {
            if (f)
                fclose(f);
            break;
        }
        fclose(f);
        const char *paren = strrchr(line, ')');
        char state = paren && paren[1] ? paren[2] : '?';
        double t = now_ms();
        if (state == 't' && since < 0) {
            since = t;
            stops++;
        } else if (state != 't' && since >= 0) {
            if (t - since > longest)
                longest = t - since;
            since = -1;
        }
        struct timespec nap = { 0, 2000000 };
        nanosleep(&nap, NULL);
    }
    if (since >= 0 && now_ms() - since > longest)
        longest = now_ms() - since;
    printf("%.0f %ld\n", longest, stops);
    return 0;
}
