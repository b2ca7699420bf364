/* Where a CLI command writes: stdout, or a file replaced whole (mode 0600,
 * temp file + rename, never through a symbolic link, nothing left under
 * the name when anything fails: util/atomic_file.h). */
#ifndef MEMPROF_TOOLS_OUTPUT_H
#define MEMPROF_TOOLS_OUTPUT_H
#include "util/atomic_file.h"
#include <stdio.h>

struct output {
    const char *path;      /* NULL: stdout */
    struct atomic_file file;
    FILE *fp;
};

/* 0, or 1 after a one-line message. */
int output_open(struct output *o, const char *path);
/* Flush and, for a file, commit (or, with `failed`, abandon): 0, or 1
 * after a one-line message. */
int output_close(struct output *o, bool failed);
#endif
