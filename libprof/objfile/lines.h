/* DWARF line tables and inlined functions of an ELF file (libdwarf), read
 * one compilation unit at a time as addresses ask for them: a code address
 * gives its source file:line and the chain of functions inlined there.
 * Not for hook paths. */
#ifndef MEMPROF_OBJFILE_LINES_H
#define MEMPROF_OBJFILE_LINES_H
#include <stddef.h>
#include <stdint.h>

struct elf_lines;

/* One frame at an address: a function inlined there, or the function that
 * holds them all (the last). `function` is the DWARF name (the linkage name
 * when there is one), NULL when DWARF has none. */
struct elf_line_frame {
    const char *function;
    const char *file;
    unsigned line;
};

/* `path`'s DWARF opened, the sections a lookup reads being inflated on a
 * second thread meanwhile (for the CLI, not a profiled process); NULL when
 * the file has no DWARF (`err` says why, one line). The file stays open until
 * elf_lines_free. */
struct elf_lines *elf_lines_open(const char *path, char *err, size_t errlen);
/* Then, once, its code ranges indexed: `l`, or NULL (`l` freed, `err` set)
 * when it has none. */
struct elf_lines *elf_lines_index(struct elf_lines *l, const char *path, char *err, size_t errlen);
/* Before the first lookup, `addrs` being the first asked for: how its DWARF
 * is best inflated (dwarf_walk_plan, by the furthest unit they need). */
void elf_lines_plan(struct elf_lines *l, const uint64_t *addrs, size_t n);
/* The file and line of `addr` (a file address); NULL outside every sequence. */
const char *elf_lines_lookup(struct elf_lines *l, uint64_t addr, unsigned *line);
/* The frames at `addr`, innermost first: each inlined function at its line,
 * then the function that holds them at the line of the outermost call.
 * How many were written (at most max); 0 when no line covers addr. */
size_t elf_lines_frames(struct elf_lines *l, uint64_t addr, struct elf_line_frame *frames, size_t max);
void elf_lines_free(struct elf_lines *l);
#endif
