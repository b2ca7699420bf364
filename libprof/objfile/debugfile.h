/* Separate debug files, found as GDB finds them: by build-id
 * (DIR/.build-id/ab/cdef....debug) or by .gnu_debuglink (the named file beside
 * the object, in its .debug/ directory, or under DIR plus the object's
 * directory), the debuglink's CRC-32 checked. DIR is each of the debug roots:
 * MEMPROF_DEBUG_DIRS (colon-separated), then /usr/lib/debug. */
#ifndef MEMPROF_OBJFILE_DEBUGFILE_H
#define MEMPROF_OBJFILE_DEBUGFILE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct debugfile_search {
    bool has_build_id, has_debuglink;
    char build_id[81];        /* hex */
    char debuglink[256];      /* the name in .gnu_debuglink */
    bool crc_mismatch;        /* a file of that name was found, with another CRC */
};

/* The debug file for `path` into `out` (true), or false with `why` telling
 * what was looked for. */
bool debugfile_find(const char *path, char *out, size_t outlen, struct debugfile_search *why);
/* What a profile's mapping says of an ELF file: its build-id (hex; "" when
 * it has none) and the end of its highest PT_LOAD segment (the extent of its
 * mapping from its load base). False when it cannot be read as ELF. */
bool elf_file_extent(const char *path, char *build_id, size_t build_id_len, uint64_t *extent);
/* Does the ELF file have a section of this name with contents? */
bool elf_has_section(const char *path, const char *name);
#endif
