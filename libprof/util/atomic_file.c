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
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return EISDIR;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        f->in_place = true;
        f->fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
        return f->fd >= 0 ? 0 : errno;
    }
    static unsigned counter;
    for (int attempt = 0; attempt < 100; attempt++) {
        struct out o;
        out_init_fd(&o, -1, f->temp, sizeof f->temp);
        out_bytes(&o, path, n);
        out_str(&o, ".tmp.");
        out_u64(&o, (uint64_t)getpid());
        out_char(&o, '.');
        out_u64(&o, __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
        if (out_finish(&o) != 0)
            return ENAMETOOLONG;
        f->fd = open(f->temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (f->fd >= 0)
            return 0;
        if (errno != EEXIST)
            return errno;
    }
    return EEXIST;
}

void atomic_file_abort(struct atomic_file *f)
{
    if (f->fd >= 0) {
        close(f->fd);
        if (!f->in_place)
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
    if (fsync(f->fd) != 0)
        err = errno;
    if (close(f->fd) != 0 && !err)
        err = errno;
    f->fd = -1;
    if (!err)
        err = refuse_symlink(f->path);
    if (!err && rename(f->temp, f->path) != 0)
        err = errno;
    if (err)
        unlink(f->temp);
    return err;
}
