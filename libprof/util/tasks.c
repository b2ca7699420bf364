#include "tasks.h"
#include "out.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

void tasks_name(pid_t tid, char name[16])
{
    char path[64];
    struct out p;
    out_init_fd(&p, -1, path, sizeof path);
    out_str(&p, "/proc/self/task/");
    out_u64(&p, (uint64_t)tid);
    out_str(&p, "/comm");
    name[0] = '\0';
    int fd = out_finish(&p) == 0 ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    if (fd < 0)
        return;
    ssize_t n = read(fd, name, 15);
    close(fd);
    n = n < 0 ? 0 : n;
    while (n > 0 && name[n - 1] == '\n')
        n--;
    name[n] = '\0';
}

/* 0 when every thread was visited, -1 when /proc cannot be opened (none
 * was), 1 when reading it failed part of the way. */
static int tasks_read(void (*visit)(pid_t tid, void *ctx), void *ctx)
{
    int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[4096];
    long n;
    while ((n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
        for (long at = 0; at < n;) {
            struct dirent64 *d = (struct dirent64 *)(buf + at);
            at += d->d_reclen;
            pid_t tid = (pid_t)strtol(d->d_name, NULL, 10);
            if (tid > 0)
                visit(tid, ctx);
        }
    }
    close(fd);
    return n == 0 ? 0 : 1;
}

void tasks_each(void (*visit)(pid_t tid, void *ctx), void *ctx)
{
    if (tasks_read(visit, ctx) < 0)
        visit(gettid(), ctx);
}

static void count_task(pid_t tid, void *ctx)
{
    int *count = ctx;
    *count += tid == gettid() ? 1 : 2;   /* another thread counts past 1 */
}

bool tasks_alone(void)
{
    int count = 0;
    return tasks_read(count_task, &count) == 0 && count == 1;
}

bool tasks_gone(pid_t tid)
{
    return syscall(SYS_tgkill, getpid(), tid, 0) != 0 && errno == ESRCH;
}
