#include "output.h"
#include <errno.h>
#include <string.h>
#include <unistd.h>

static int complain(const char *path, int err)
{
    fprintf(stderr, "memprof: cannot write %s: %s\n", path,
            err == ELOOP ? "it is a symbolic link (refusing to follow it)" : strerror(err));
    return 1;
}

int output_open(struct output *o, const char *path)
{
    *o = (struct output){ .path = path, .file = { .fd = -1 } };
    if (!path) {
        o->fp = stdout;
        return 0;
    }
    int err = atomic_file_open(&o->file, path);
    if (err)
        return complain(path, err);
    int fd = dup(o->file.fd);
    if (fd < 0 || !(o->fp = fdopen(fd, "w"))) {
        err = errno;
        if (fd >= 0)
            close(fd);
        atomic_file_abort(&o->file);
        return complain(path, err);
    }
    return 0;
}

int output_close(struct output *o, bool failed)
{
    int err = fflush(o->fp) != 0 || ferror(o->fp) ? (errno ? errno : EIO) : 0;
    if (!o->path)
        return err ? complain("the output", err) : 0;
    if (fclose(o->fp) != 0 && !err)
        err = errno ? errno : EIO;
    if (failed || err) {
        atomic_file_abort(&o->file);
        return err ? complain(o->path, err) : 1;
    }
    err = atomic_file_commit(&o->file);
    return err ? complain(o->path, err) : 0;
}
