/* A program or library file as `memprof symbols` and `memprof imports`
 * read it, ELF or Mach-O, without the caller seeing which: its symbols
 * (local, external, undefined) and its imports, each the slot the dynamic
 * linker fills and a hook would patch, with the stub that jumps through
 * it. elf_binary.c and macho.c fill it in. Reads files and calls malloc:
 * not for hooks. */
#ifndef MEMPROF_OBJFILE_BINARY_H
#define MEMPROF_OBJFILE_BINARY_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum binary_bind {
    BINARY_LOCAL,       /* seen only inside the file */
    BINARY_EXTERNAL,    /* defined here, seen by others (ELF global or weak; Mach-O N_EXT) */
    BINARY_UNDEFINED,   /* used here, defined elsewhere */
};

struct binary_symbol {
    const char *name;
    uint64_t address;   /* a file address (0 for an undefined one) */
    uint64_t size;      /* ELF's st_size; Mach-O keeps none: to the next symbol of its section */
    enum binary_bind bind;
    bool weak;
    bool function;      /* defined in a section of code */
    const char *section;   /* ".text", "__TEXT,__text"; "" when none */
    const char *library;   /* an undefined one's library, where the file names it; else "" */
};

struct binary_import {
    const char *symbol;
    const char *library;   /* Mach-O: the dylib bound from; ELF: the version's file, or "" */
    const char *version;   /* ELF: GLIBC_2.2.5, "@GLIBC_2.2.5" for the default version of a symbol the
                              file defines (read name@@GLIBC_2.2.5, as readelf writes it); else "" */
    uint64_t slot;         /* the pointer the dynamic linker writes (file address) */
    const char *slot_kind; /* "JUMP_SLOT", "GLOB_DAT", "64", "lazy pointer", "non-lazy pointer", "pointer" */
    const char *slot_section;
    uint64_t stub;         /* the code that jumps through the slot (PLT entry, __stubs entry), 0: none */
    const char *stub_section;
    bool lazy;             /* bound at the first call, not at load */
};

struct binary;

/* The file at `path`; for a universal Mach-O the slice of `arch` (NULL: the
 * x86_64 one, else the first). NULL with a one-line `err` naming the
 * problem (not found, neither ELF nor Mach-O, truncated, a command past
 * the end...). */
struct binary *binary_open(const char *path, const char *arch, char *err, size_t errlen);
/* "ELF 64-bit x86-64 shared object", "Mach-O 64-bit x86_64 executable". */
const char *binary_format(const struct binary *b);
/* Where the symbols and imports were read from, one line. */
const char *binary_sources(const struct binary *b);
/* Every symbol: the defined ones by address, then the undefined by name. */
size_t binary_symbol_count(const struct binary *b);
const struct binary_symbol *binary_symbol_at(const struct binary *b, size_t i);
/* The imports by slot address; false with `why` (a one-line reason) when
 * the file binds in a way memprof does not read. */
bool binary_imports(const struct binary *b, const struct binary_import **imports, size_t *count,
                    const char **why);
void binary_close(struct binary *b);
#endif
