/* Descriptors of memprof's own threads, kept out of the program's table.
 * A program believes it owns every descriptor number: bash closes and
 * dup2s numbers it thinks free, a daemon closes all it did not open. A
 * thread of memprof's that opened files in the program's table while the
 * program runs would lose them to it, or write into the program's own. */
#ifndef MEMPROF_UTIL_OWN_FILES_H
#define MEMPROF_UTIL_OWN_FILES_H
#include <stdbool.h>
#include <stddef.h>

/* For a thread of memprof's own, first thing: a descriptor table of its
 * own (unshare(CLONE_FILES)) holding only `keep` (count of them; -1s are
 * skipped), and /dev/null as those of 0, 1 and 2 not kept, so that no
 * later file of the thread's is taken for a standard stream. 0, or the errno of the
 * failure (the table is then still the program's). */
int own_files_unshare(const int *keep, size_t count);

/* Where the calling thread writes a line for the user: the program's
 * standard error as it is now. In a thread with a table of its own, a
 * descriptor opened on it (O_APPEND) that own_files_stderr_close closes;
 * -1 if the program has none that can be opened again. */
int own_files_stderr_open(void);
void own_files_stderr_close(int fd);

#endif
