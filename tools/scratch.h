/* Scratch directories: where a profiled process writes files the CLI reads
 * back at once (memprof run's raw reports, memprof attach's report written
 * at a safe point). */
#ifndef MEMPROF_TOOLS_SCRATCH_H
#define MEMPROF_TOOLS_SCRATCH_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* A new directory in TMPDIR (mode 0700) into `dir`; `owner` (not -1): given
 * to that user, for a process of theirs to write in (root attaching to
 * another user's process). 0, or EXIT_USAGE after one line on stderr. */
int scratch_make(char *dir, size_t size, uid_t owner);
/* The directory gone, with whatever is left in it. */
void scratch_remove(const char *dir);

/* A file awaited in a scratch directory while the process that writes it
 * runs: the runtime links each report there whole (util/atomic_file.c), so
 * it can be read as soon as its name is there, while the process ends. */
struct scratch_watch {
    int fd;   /* inotify's, or -1 */
};
/* Watching `dir` (before the writer starts: no file is missed); false when
 * it cannot be watched (no inotify). */
bool scratch_watch_start(struct scratch_watch *w, const char *dir);
/* Until child `pid` (not yet waited for) ends or `wanted` says yes to a
 * file just named in the directory: true for the file, false when the
 * child ended first (or cannot be waited on so). */
bool scratch_watch_until(struct scratch_watch *w, pid_t pid, bool (*wanted)(const char *name, void *ctx), void *ctx);
void scratch_watch_end(struct scratch_watch *w);
#endif
