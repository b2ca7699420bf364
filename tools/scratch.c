#include "scratch.h"
#include "commands.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <unistd.h>

int scratch_make(char *dir, size_t size, uid_t owner)
{
    const char *tmpdir = getenv("TMPDIR");
    const char *base = tmpdir && *tmpdir ? tmpdir : "/tmp";
    errno = 0;
    if ((size_t)snprintf(dir, size, "%s/memprof.XXXXXX", base) >= size || !mkdtemp(dir)) {
        fprintf(stderr, "memprof: cannot create a temporary directory in %s: %s\n", base,
                strerror(errno ? errno : ENAMETOOLONG));
        return EXIT_USAGE;
    }
    if (owner != (uid_t)-1 && owner != geteuid() && chown(dir, owner, (gid_t)-1) != 0) {
        fprintf(stderr, "memprof: cannot give %s to user %ld: %s\n", dir, (long)owner, strerror(errno));
        rmdir(dir);
        return EXIT_USAGE;
    }
    return 0;
}

void scratch_remove(const char *dir)
{
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            unlinkat(dirfd(d), e->d_name, 0);
    if (d)
        closedir(d);
    rmdir(dir);
}

bool scratch_watch_start(struct scratch_watch *w, const char *dir)
{
    w->fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);   /* not inherited by COMMAND */
    if (w->fd >= 0 && inotify_add_watch(w->fd, dir, IN_CREATE | IN_MOVED_TO) < 0) {
        close(w->fd);
        w->fd = -1;
    }
    return w->fd >= 0;
}

bool scratch_watch_until(struct scratch_watch *w, pid_t pid, bool (*wanted)(const char *name, void *ctx), void *ctx)
{
    if (w->fd < 0)
        return false;
    /* The child's end as a descriptor (Linux 5.3): readable once it exits,
     * until it is waited for. */
    int child = (int)syscall(SYS_pidfd_open, pid, 0);
    if (child < 0)
        return false;
    bool found = false;
    while (!found) {
        struct pollfd p[2] = { { .fd = child, .events = POLLIN }, { .fd = w->fd, .events = POLLIN } };
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (p[0].revents)
            break;   /* ended: the caller reads what is there after waiting */
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        ssize_t n = read(w->fd, buf, sizeof buf);
        for (ssize_t at = 0; at < n && !found;) {
            const struct inotify_event *e = (const struct inotify_event *)(const void *)(buf + at);
            at += (ssize_t)(sizeof *e + e->len);
            found = e->len && wanted(e->name, ctx);
        }
    }
    close(child);
    return found;
}

void scratch_watch_end(struct scratch_watch *w)
{
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
}
