/* One timed run for the benchmarks: COMMAND's wall time, its largest
 * resident set and its CPU time (user + system, its own and that of every
 * process it waited for: memprof's CLI and the program it ran), appended to
 * FILE as "wall_seconds max_rss_kb cpu_seconds". The CPU time is what a run
 * costs apart from this machine's scheduling (a vCPU taken away for a while
 * stretches the wall time of a two-thread run, not its CPU time); both are
 * to microseconds, where time(1) rounds to 10 ms.
 *
 *   measure FILE [NAME=VALUE]... COMMAND [ARG]...
 *                                     exit status: COMMAND's (128+N: signal N)
 *
 * NAME=VALUE arguments are set in COMMAND's environment, as env(1) would:
 * a run under LD_PRELOAD is timed without env's own start (about 1 ms here,
 * its exec and its locale files).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double seconds(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* NAME=VALUE, NAME a shell variable's name (the C locale's letters). */
static bool is_assignment(const char *arg)
{
    const char *p = arg;
    if (!isalpha((unsigned char)*p) && *p != '_')
        return false;
    while (isalnum((unsigned char)*p) || *p == '_')
        p++;
    return *p == '=';
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: measure FILE [NAME=VALUE]... COMMAND [ARG]...\n");
        return 2;
    }
    int command = 2;
    while (command < argc && is_assignment(argv[command]))
        command++;
    if (command == argc) {
        fprintf(stderr, "measure: no command after the assignments\n");
        return 2;
    }
    FILE *out = fopen(argv[1], "a");
    if (!out) {
        fprintf(stderr, "measure: cannot open %s: %s\n", argv[1], strerror(errno));
        return 2;
    }
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "measure: fork: %s\n", strerror(errno));
        return 2;
    }
    if (pid == 0) {
        for (int i = 2; i < command; i++)
            if (putenv(argv[i]) != 0)
                _exit(127);
        execvp(argv[command], argv + command);
        fprintf(stderr, "measure: cannot run %s: %s\n", argv[command], strerror(errno));
        _exit(127);
    }
    int status;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0)
        if (errno != EINTR) {
            fprintf(stderr, "measure: wait4: %s\n", strerror(errno));
            return 2;
        }
    clock_gettime(CLOCK_MONOTONIC, &end);
    double wall = (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9;
    fprintf(out, "%.6f %ld %.6f\n", wall, ru.ru_maxrss, seconds(ru.ru_utime) + seconds(ru.ru_stime));
    if (fclose(out) != 0) {
        fprintf(stderr, "measure: cannot write %s\n", argv[1]);
        return 2;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
