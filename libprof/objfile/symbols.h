/* Function symbols of an ELF file on disk (.symtab, else .dynsym), read with
 * libelf and sorted by address, for naming a code address at report time.
 * Not for hook paths: it reads files and calls malloc. */
#ifndef MEMPROF_OBJFILE_SYMBOLS_H
#define MEMPROF_OBJFILE_SYMBOLS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elf_symbols;

/* NULL with `err` set (one line) when the file cannot be read as ELF. A file
 * with no function symbols gives an empty table, not an error. */
struct elf_symbols *elf_symbols_read(const char *path, char *err, size_t errlen);
/* The same for the data objects (static and global variables). */
struct elf_symbols *elf_symbols_read_data(const char *path, char *err, size_t errlen);
/* The table elf_symbols_read takes from `path` (".symtab", ".dynsym", or ""
 * when it has neither), found without reading it; NULL with why in err when
 * `path` cannot be read as ELF. */
const char *elf_symbols_table_of(const char *path, char *err, size_t errlen);
/* The function whose [start, start + size) holds `addr` (a file address:
 * for a shared object, the run-time address minus the load bias), and the
 * offset into it; NULL if none does: never the nearest other function. */
const char *elf_symbols_lookup(const struct elf_symbols *s, uint64_t addr, uint64_t *offset);
/* (A NULL table has no symbols: lookup and count take it.) */
size_t elf_symbols_count(const struct elf_symbols *s);
/* Symbol `i` in address order. */
void elf_symbols_get(const struct elf_symbols *s, size_t i, const char **name, uint64_t *start,
                     uint64_t *size);
/* Which table the symbols came from: ".symtab", ".dynsym" or "" (none). */
const char *elf_symbols_source(const struct elf_symbols *s);
void elf_symbols_free(struct elf_symbols *s);
#endif
