/* Scratch directories: where a profiled process writes files the CLI reads
 * back at once (memprof run's raw reports, memprof attach's report written
 * at a safe point). */
#ifndef MEMPROF_TOOLS_SCRATCH_H
#define MEMPROF_TOOLS_SCRATCH_H
#include <stddef.h>
#include <sys/types.h>

/* A new directory in TMPDIR (mode 0700) into `dir`; `owner` (not -1): given
 * to that user, for a process of theirs to write in (root attaching to
 * another user's process). 0, or EXIT_USAGE after one line on stderr. */
int scratch_make(char *dir, size_t size, uid_t owner);
/* The directory gone, with whatever is left in it. */
void scratch_remove(const char *dir);
#endif
