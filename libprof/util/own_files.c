#include "own_files.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static __thread bool own_table __attribute__((tls_model("initial-exec")));

static bool kept(int fd, const int *keep, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (keep[i] == fd)
            return true;
    return false;
}

/* Every descriptor of the calling thread's table but `keep`: from
 * /proc/thread-self/fd (getdents64: opendir mallocs), for kernels before
 * close_range (5.9). */
static int close_listed(const int *keep, size_t count)
{
    int dir = open("/proc/thread-self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
        return errno;
    char buf[4096];
    long n;
    while ((n = syscall(SYS_getdents64, dir, buf, sizeof buf)) > 0) {
        for (long at = 0; at < n;) {
            struct dirent64 *d = (struct dirent64 *)(buf + at);
            at += d->d_reclen;
            if (d->d_name[0] < '0' || d->d_name[0] > '9')
                continue;
            int fd = (int)strtol(d->d_name, NULL, 10);
            if (fd != dir && !kept(fd, keep, count))
                close(fd);
        }
    }
    close(dir);
    return n == 0 ? 0 : errno;
}

/* The numbers between those kept, closed a range at a time. */
static int close_ranges(const int *keep, size_t count)
{
    unsigned from = 0;
    for (;;) {
        unsigned next = ~0u;   /* the lowest kept at or above `from` */
        for (size_t i = 0; i < count; i++)
            if (keep[i] >= 0 && (unsigned)keep[i] >= from && (unsigned)keep[i] < next)
                next = (unsigned)keep[i];
        unsigned to = next == ~0u ? ~0u : next - 1;
        if (next != from && syscall(SYS_close_range, from, to, 0) != 0)
            return errno;
        if (next == ~0u)
            return 0;
        from = next + 1;
    }
}

int own_files_unshare(const int *keep, size_t count)
{
    if (unshare(CLONE_FILES) != 0)
        return errno;
    /* The copy holds the program's pipes and sockets open: a reader waiting
     * for the end of one would wait for us. */
    own_table = true;
    int err = close_ranges(keep, count);
    if (err)
        err = close_listed(keep, count);
    for (int fd = 0; fd <= 2 && !err; fd++) {
        if (kept(fd, keep, count))
            continue;
        int got = open("/dev/null", O_RDWR);
        if (got != fd) {
            err = got < 0 ? errno : EBADF;
            if (got >= 0)
                close(got);
        }
    }
    return err;
}

int own_files_stderr_open(void)
{
    if (!own_table)
        return STDERR_FILENO;
    /* /proc/self is the thread group's leader: the program's table. */
    return open("/proc/self/fd/2", O_WRONLY | O_APPEND | O_NOCTTY | O_CLOEXEC);
}

void own_files_stderr_close(int fd)
{
    if (fd != STDERR_FILENO && fd >= 0)
        close(fd);
}
