/* The ELF side of binary.h (libelf). Private to objfile/. */
#ifndef MEMPROF_OBJFILE_ELF_BINARY_H
#define MEMPROF_OBJFILE_ELF_BINARY_H
#include "binary.h"
#include <stddef.h>

/* Read the ELF file open on `fd` (named `path`, for its debug file) into
 * `b`. 0, or -1 with a one-line `err`. */
int elf_binary_read(struct binary *b, const char *path, int fd, char *err, size_t errlen);
#endif
