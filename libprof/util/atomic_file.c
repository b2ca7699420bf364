#include "atomic_file.h"
#include "out.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int refuse_symlink(const char *path)
{
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
        return ELOOP;
    return 0;
}

static unsigned counter;

/* A new name beside the target: PATH.tmp.PID.N. */
static int name_temp(struct atomic_file *f, const char *path, size_t n)
{
    struct out o;
    out_init_fd(&o, -1, f->temp, sizeof f->temp);
    out_bytes(&o, path, n);
    out_str(&o, ".tmp.");
    out_u64(&o, (uint64_t)getpid());
    out_char(&o, '.');
    out_u64(&o, __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
    return out_finish(&o) != 0 ? ENAMETOOLONG : 0;
}

/* Where unnamed files are not supported: a named one, removed on failure. */
static int open_named_temp(struct atomic_file *f, const char *path, size_t n)
{
    for (int attempt = 0; attempt < 100; attempt++) {
        int err = name_temp(f, path, n);
        if (err)
            return err;
        f->fd = open(f->temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (f->fd >= 0)
            return 0;
        if (errno != EEXIST)
            return errno;
    }
    return EEXIST;
}

/* Give the unnamed file f->fd the name `to` (fails with EEXIST if taken).
 * thread-self: a thread of memprof's own has a descriptor table of its own
 * (own_files.h), and /proc/self/fd is the main thread's. */
static int link_unnamed(const struct atomic_file *f, const char *to)
{
    char self[64];
    struct out o;
    out_init_fd(&o, -1, self, sizeof self);
    out_str(&o, "/proc/thread-self/fd/");
    out_u64(&o, (uint64_t)f->fd);
    out_finish(&o);
    return linkat(AT_FDCWD, self, AT_FDCWD, to, AT_SYMLINK_FOLLOW) == 0 ? 0 : errno;
}

int atomic_file_open(struct atomic_file *f, const char *path)
{
    f->fd = -1;
    size_t n = strlen(path);
    if (n == 0)
        return ENOENT;
    if (n + 40 >= sizeof f->temp)
        return ENAMETOOLONG;
    int err = refuse_symlink(path);
    if (err)
        return err;
    memcpy(f->path, path, n + 1);
    f->in_place = false;
    f->scratch = false;
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return EISDIR;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        f->in_place = true;
        f->fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
        return f->fd >= 0 ? 0 : errno;
    }
    /* An unnamed file first (O_TMPFILE): a process that dies before the
     * commit leaves nothing behind. */
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path) : 1;
    memcpy(f->temp, slash ? path : ".", dir_len);
    f->temp[dir_len ? dir_len : 1] = '\0';
    if (slash == path)
        f->temp[0] = '/';
    f->fd = open(f->temp, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
    if (f->fd >= 0) {
        f->temp[0] = '\0';
        return 0;
    }
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
        return errno;
    return open_named_temp(f, path, n);
}

void atomic_file_abort(struct atomic_file *f)
{
    if (f->fd >= 0) {
        close(f->fd);
        if (!f->in_place && f->temp[0])
            unlink(f->temp);
        f->fd = -1;
    }
}

int atomic_file_commit(struct atomic_file *f)
{
    int err = 0;
    if (f->in_place) {
        err = close(f->fd) != 0 ? errno : 0;
        f->fd = -1;
        return err;
    }
    if (!f->scratch && fsync(f->fd) != 0)
        err = errno;
    if (!err)
        err = refuse_symlink(f->path);
    if (!err && !f->temp[0]) {
        /* Unnamed: straight to its name when that is free, else under a
         * temporary name renamed over the old report. */
        err = link_unnamed(f, f->path);
        if (err == EEXIST && !(err = name_temp(f, f->path, strlen(f->path))))
            err = link_unnamed(f, f->temp);
        else
            f->temp[0] = '\0';
    }
    if (close(f->fd) != 0 && !err)
        err = errno;
    f->fd = -1;
    if (!err && f->temp[0] && rename(f->temp, f->path) != 0)
        err = errno;
    if (err && f->temp[0])
        unlink(f->temp);
    return err;
}
