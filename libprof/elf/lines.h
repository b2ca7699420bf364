/* DWARF line tables of an ELF file, read with libdwarf into one sorted array:
 * a code address gives its source file:line. Not for hook paths. */
#ifndef MEMPROF_ELF_LINES_H
#define MEMPROF_ELF_LINES_H
#include <stddef.h>
#include <stdint.h>

struct elf_lines;

/* NULL when the file has no DWARF line table (`err` says why, one line). */
struct elf_lines *elf_lines_read(const char *path, char *err, size_t errlen);
/* The file and line of `addr` (a file address); NULL outside every sequence. */
const char *elf_lines_lookup(const struct elf_lines *l, uint64_t addr, unsigned *line);
void elf_lines_free(struct elf_lines *l);
#endif
