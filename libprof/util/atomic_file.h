/* Reports reach disk whole or not at all: written to a temporary file in the
 * target's directory (mode 0600, O_EXCL|O_NOFOLLOW), synced (unless marked a
 * scratch file, which another process reads back at once), then renamed over
 * the target. A target that is a symlink is refused, never followed. A target
 * that is a device or a FIFO (/dev/null, a pipe) is written in place: renaming
 * over it would replace the device node with a file. */
#ifndef MEMPROF_UTIL_ATOMIC_FILE_H
#define MEMPROF_UTIL_ATOMIC_FILE_H
#include <limits.h>
#include <stdbool.h>

struct atomic_file {
    int fd;
    char path[PATH_MAX];
    char temp[PATH_MAX];
    bool in_place;   /* a device or FIFO: no temporary file, no rename */
    bool scratch;    /* set after open: no fsync before the rename */
};

/* 0, or an errno (ELOOP: the target is a symlink; EISDIR: a directory). */
int atomic_file_open(struct atomic_file *f, const char *path);
int atomic_file_commit(struct atomic_file *f);   /* 0 or errno; temp removed on failure */
void atomic_file_abort(struct atomic_file *f);
#endif
