/* memprof's settings from the environment, as the process started with
 * them. A program may bring its own getenv and setenv: bash's read its
 * shell variables, which do not exist before its main and are gone by its
 * exit. It may also change or clear environ. So MEMPROF_* and TMPDIR are
 * copied from environ once, before anything else reads them. */
#ifndef MEMPROF_UTIL_ENVIRONMENT_H
#define MEMPROF_UTIL_ENVIRONMENT_H
#include <stdbool.h>

/* The copy (again, after a call in a process that was not yet started). */
void environment_capture(void);
/* A setting's value as the process started with it; NULL when unset. */
const char *env_get(const char *name);
/* Set, not empty, and not a "no". */
bool env_says_yes(const char *name);
/* "0", "no" or "false". */
bool env_says_no(const char *name);
/* `name` set for the process's children, with libc's setenv (not one the
 * program defines); the copy is not changed. 0, or an errno. */
int env_set_for_children(const char *name, const char *value);
#endif
