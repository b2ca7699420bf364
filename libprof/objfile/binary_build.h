/* What the readers of each format (elf_binary.c, macho.c) fill in: the
 * struct behind binary.h, and how they add to it. Private to objfile/. */
#ifndef MEMPROF_OBJFILE_BINARY_BUILD_H
#define MEMPROF_OBJFILE_BINARY_BUILD_H
#include "binary.h"

struct binary {
    char format[96];
    char sources[512];
    bool imports_read;            /* else imports_why says why not */
    char imports_why[256];
    struct binary_symbol *symbols;
    size_t symbol_count, symbol_cap;
    struct binary_import *imports;
    size_t import_count, import_cap;
    char **strings;               /* the copies the entries point at */
    size_t string_count, string_cap;
};

/* A copy of `len` bytes of `s` (not NUL-terminated in the file, perhaps)
 * that lives as long as `b`; NULL when out of memory. */
const char *binary_keep(struct binary *b, const char *s, size_t len);
/* Add a symbol, its strings copied. False when out of memory. */
bool binary_add_symbol(struct binary *b, const struct binary_symbol *s);
/* Add an import as it is: its strings must live as long as `b` (string
 * literals, or binary_keep's copies made once for all the imports that
 * share them: a file may bind a million times). */
bool binary_add_import(struct binary *b, const struct binary_import *i);
/* The orders binary.h promises: the defined symbols by address (the larger
 * of two aliases first), then the undefined by name; the imports by slot. */
void binary_sort_symbols(struct binary *b);
void binary_sort_imports(struct binary *b);
#endif
