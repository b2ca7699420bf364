/* A program that believes it owns every descriptor number, as bash and
 * daemons do, while memprof's threads write the peak report, sample the
 * timeline or serve profiles.
 *   lowest REPORT: the heap grows (a peak report each step) while the
 *     program opens and closes /dev/null; each open must give the lowest
 *     free number, as without memprof, until REPORT was written 5 times.
 *   own FILE: every descriptor but 0-2 closed, as a daemon does; FILE
 *     opened and written a line at a time while the heap changes for 1 s:
 *     FILE must hold the program's lines only.
 *   serve: every descriptor but 0-2 closed; a listening socket of the
 *     program's own ("port N"), which answers one client "mine", then the
 *     program runs until its standard input ends.
 *   sigwait: SIGTERM blocked in the program's thread and taken with
 *     sigtimedwait, as servers do: 20 sent to the process while its heap
 *     changes must all be taken (a thread of memprof's that did not block
 *     it would be killed by it, the whole process with it). */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int lowest(const char *report)
{
    int base = open("/dev/null", O_RDONLY);
    close(base);
    long opens = 0, not_lowest = 0, reports = 0;
    ino_t last = 0;
    double start = now();
    while (reports < 5 && now() - start < 30) {
        char *block = malloc(64 << 10);   /* kept: the heap grows */
        if (block)
            block[0] = 1;
        for (int i = 0; i < 200; i++) {
            int fd = open("/dev/null", O_RDONLY);
            opens++;
            if (fd != base)
                not_lowest++;
            close(fd);
        }
        struct stat st;
        if (stat(report, &st) == 0 && st.st_ino != last) {
            last = st.st_ino;
            reports++;
        }
    }
    printf("opens %ld, not the lowest %ld, reports %ld\n", opens, not_lowest, reports);
    return 0;
}

static void close_all_but_standard(void)
{
    close_range(3, ~0u, 0);
}

static int own(const char *path)
{
    close_all_but_standard();
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return perror(path), 1;
    long lines = 0;
    void *kept[64] = { 0 };
    double start = now();
    while (now() - start < 1.0) {
        size_t slot = (size_t)lines % 64;
        free(kept[slot]);
        kept[slot] = malloc(1000 + (size_t)lines % 5000);
        char line[32];
        int n = snprintf(line, sizeof line, "mine %ld\n", lines++);
        if (write(fd, line, (size_t)n) != n)
            return perror("write"), 1;
        usleep(100);
    }
    close(fd);
    printf("wrote %ld lines\n", lines);
    return 0;
}

static int serve(void)
{
    close_all_but_standard();
    int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);   /* never blocks on a taken connection */
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof a;
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 4) != 0 ||
        getsockname(s, (struct sockaddr *)&a, &len) != 0)
        return perror("socket"), 1;
    printf("port %d\n", ntohs(a.sin_port));
    fflush(stdout);
    struct pollfd p = { .fd = s, .events = POLLIN };
    if (poll(&p, 1, 30000) == 1) {
        int c = accept4(s, NULL, NULL, 0);
        char request[1024];
        if (c >= 0 && read(c, request, sizeof request) > 0) {
            const char *answer = "HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nmine\n";
            if (write(c, answer, strlen(answer)) < 0)
                perror("write");
        }
        if (c >= 0)
            close(c);
    }
    char rest[256];
    while (read(0, rest, sizeof rest) > 0)
        ;
    return 0;
}

static int sigwait_mode(void)
{
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    sigprocmask(SIG_BLOCK, &term, NULL);
    int taken = 0;
    for (int i = 0; i < 20; i++) {
        for (int j = 0; j < 1000; j++)
            free(malloc((size_t)(j % 97 + 1) * 1024));
        nanosleep(&(struct timespec){ 0, 20000000 }, NULL);   /* the threads run between */
        kill(getpid(), SIGTERM);
        if (sigtimedwait(&term, NULL, &(struct timespec){ 5, 0 }) == SIGTERM)
            taken++;
    }
    printf("took %d of 20\n", taken);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "lowest") == 0)
        return lowest(argv[2]);
    if (argc == 3 && strcmp(argv[1], "own") == 0)
        return own(argv[2]);
    if (argc == 2 && strcmp(argv[1], "serve") == 0)
        return serve();
    if (argc == 2 && strcmp(argv[1], "sigwait") == 0)
        return sigwait_mode();
    fprintf(stderr, "usage: descriptors lowest REPORT | own FILE | serve | sigwait\n");
    return 2;
}
