/* Naming code addresses of one ELF file: the function and offset from its
 * symbol tables, the source file:line from DWARF, each taken from the file
 * itself or from its separate debug file (build-id, .gnu_debuglink). */
#ifndef MEMPROF_OBJFILE_SYMBOLIZER_H
#define MEMPROF_OBJFILE_SYMBOLIZER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct symbolizer;

struct symbol_info {
    const char *function;   /* NULL: no symbol covers the address */
    uint64_t offset;
    const char *file;       /* NULL: no line information */
    unsigned line;
};

/* Remember what naming finds in `dir`, across runs, for the symbolizers
 * opened from now on (name_cache.h; NULL or "": not at all, the default). */
void symbolizer_remember_in(const char *dir);
/* NULL with `err` set when `path` cannot be read as ELF. */
struct symbolizer *symbolizer_open(const char *path, char *err, size_t errlen);
/* `addr` is a file address (for a shared object: run-time address - bias). */
void symbolizer_lookup(struct symbolizer *s, uint64_t addr, struct symbol_info *out);
/* The frames at `addr`, innermost first, as `addr2line -f -i` gives them:
 * each function inlined there (its DWARF name, mangled when C++) at its
 * line, then the function holding them (its symbol-table name and offset)
 * at the line of the outermost call. At least one frame when max > 0. */
#define SYMBOLIZER_MAX_INLINED 32
size_t symbolizer_frames(struct symbolizer *s, uint64_t addr, struct symbol_info *frames, size_t max);
/* The addresses about to be named by symbolizer_frames, all of them: those
 * not remembered decide how the DWARF is read, the furthest unit they need
 * rather than the first's (elf_lines_plan). Optional. */
void symbolizer_expect(struct symbolizer *s, const uint64_t *addrs, size_t n);
/* One line on where names and lines come from, or why there are none. */
const char *symbolizer_sources(const struct symbolizer *s);
/* Every function symbol (read now if no lookup has read them yet). */
const struct elf_symbols *symbolizer_symbols(struct symbolizer *s);
void symbolizer_close(struct symbolizer *s);
#endif
