/* Function symbols of the loaded objects from their files on disk (.symtab,
 * or a separate debug file), for hooks on functions no object exports: read
 * by libmemprof-elf.so, which is loaded from the runtime's own directory on
 * first use (it brings libelf and libdwarf, which the runtime does not link).
 * Reads files and calls malloc: not for hooks. */
#ifndef MEMPROF_ELF_DISK_SYMBOLS_H
#define MEMPROF_ELF_DISK_SYMBOLS_H
#include "../arch/x86_64/decode.h"
#include "inline_entries.h"
#include <stddef.h>
#include <stdint.h>

struct disk_function_set {
    uintptr_t address;             /* of the function asked for */
    struct code_range *functions;  /* every function of its object, run-time addresses */
    size_t count, bytes;
};

/* The first loaded object whose symbols name a function `name`. 0, or an
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
 * it, with where `parameter` is at each entry (inline_entries.h), at
 * run-time addresses. 0, or an errno with a one-line `message`. */
struct disk_inline_set {
    const char *names[2];          /* the function and the parameter asked for */
    struct inline_entry *entries;
    size_t count, bytes;
};
int disk_symbols_inline_entries(const char *function, const char *parameter, struct disk_inline_set *out,
                                char *message, size_t size);
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
