/* Function symbols of the loaded objects from their files on disk (.symtab,
 * or a separate debug file), for hooks on functions no object exports: read
 * by libmemprof-elf.so, which is loaded from the runtime's own directory on
 * first use (it brings libelf and libdwarf, which the runtime does not link).
 * Reads files and calls malloc: not for hooks. */
#ifndef MEMPROF_OBJFILE_DISK_SYMBOLS_H
#define MEMPROF_OBJFILE_DISK_SYMBOLS_H
#include "../arch/x86_64/decode.h"
#include "inline_entries.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A compiler's copy of a function under another symbol: a clone made for
 * some of its calls (NAME.constprop.N, NAME.isra.N, NAME.part.N: it may
 * take other arguments than NAME), or NAME renamed (NAME.lto_priv.N,
 * NAME.llvm.N: the same function). */
struct disk_clone {
    uintptr_t address;
    char name[128];
    bool renamed;
};
#define DISK_CLONES_MAX 8

struct disk_function_set {
    uintptr_t address;             /* of the function asked for (0: only its clones were found) */
    struct disk_clone clones[DISK_CLONES_MAX];
    size_t clone_count;            /* may exceed DISK_CLONES_MAX: the rest were not kept */
    struct code_range *functions;  /* every function of its object, run-time addresses */
    size_t count, bytes;
};

/* The first loaded object whose symbols name a function `name` or a clone
 * of it, with its clones. 0, or an
 * errno with a one-line `message`: ENOENT (no object's symbols name it: say
 * which had no symbol table), ELIBACC (the helper library cannot be
 * loaded), ENOMEM. */
int disk_symbols_find(const char *name, struct disk_function_set *out, char *message, size_t size);
void disk_symbols_free(struct disk_function_set *set);
/* The code of function `name` from DWARF: its own copy and every instance
 * inlined into other functions, in out->functions (out->address unset). 0,
 * or an errno with a one-line `message`. */
int disk_symbols_spans(const char *name, struct disk_function_set *out, char *message, size_t size);
/* Every copy of function `name` in the first loaded object whose DWARF has
 * it, with where `parameter` is at each entry (inline_entries.h), and
 * `second` too unless NULL (in seconds[], one per entry, PARAM_UNREADABLE
 * where the copy lacks it), at run-time addresses; the symbols of the
 * copies out of line (NAME, or a clone of it: NAME.constprop.0). 0, or an
 * errno with a one-line `message`. */
struct disk_inline_set {
    const char *names[3];          /* the function and the parameters asked for */
    struct inline_entry *entries, *seconds;
    size_t count, bytes, second_bytes;
    struct disk_clone own[DISK_CLONES_MAX];   /* .address: an entry's */
    size_t own_count;
};
int disk_symbols_inline_entries(const char *function, const char *parameter, const char *second,
                                struct disk_inline_set *out, char *message, size_t size);
void disk_inline_free(struct disk_inline_set *set);
/* The run-time address of the variable `name` (a data object of some loaded
 * object's symbol table). 0, or an errno with a one-line `message`. */
int disk_symbols_variable(const char *name, uintptr_t *address, char *message, size_t size);
/* Call each(ctx, name, run-time address, size) for every function of the
 * file of object `o` (its .symtab, or its debug file's), until one returns
 * non-zero. 0, or an errno with a one-line `message`. */
struct elf_object;
typedef int disk_function_fn(void *ctx, const char *name, uintptr_t address, size_t size);
int disk_symbols_each(const struct elf_object *o, disk_function_fn *each, void *ctx, char *message, size_t size);
#endif
