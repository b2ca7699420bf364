/* Another machine's files, where they were copied to: the directory a
 * report's paths are looked up under first (gdb's `set sysroot`, perf's
 * --symfs), for naming an arm64 program's report on x86-64, say. */
#ifndef MEMPROF_OBJFILE_SYSROOT_H
#define MEMPROF_OBJFILE_SYSROOT_H
#include <stddef.h>

/* The directory (NULL or "": none); else MEMPROF_SYSROOT's, read at the
 * first lookup. */
void sysroot_set(const char *dir);
/* The directory, or "" for none. */
const char *sysroot_dir(void);
/* `path` under the directory when a file is there, else `path` itself. */
const char *sysroot_path(const char *path, char *buf, size_t size);
#endif
