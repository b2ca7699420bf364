/* libmemprof-elf.so: function symbols of a file on disk, for the runtime,
 * which loads this library (and with it libelf and libdwarf) only when a
 * hook needs symbols no loaded object exports (elf/disk_symbols.c). The
 * symbols come from the file's .symtab or from its separate debug file
 * (build-id, .gnu_debuglink), as the symbolizer finds them. */
#include "debugfile.h"
#include "inline_entries.h"
#include "inlines.h"
#include "symbolizer.h"
#include "symbols.h"
#include <stdio.h>
#include <string.h>

typedef int memprof_elf_function_fn(void *ctx, const char *name, uint64_t address, uint64_t size);

/* Call `each` for every function symbol (file addresses), in address order,
 * until it returns non-zero. 0, with where the symbols came from in
 * `message`; -1 with why not. */
__attribute__((visibility("default"))) int memprof_elf_functions(const char *path, memprof_elf_function_fn *each,
                                                                void *ctx, char *message, size_t size)
{
    struct symbolizer *s = symbolizer_open(path, message, size);
    if (!s)
        return -1;
    const struct elf_symbols *symbols = symbolizer_symbols(s);
    snprintf(message, size, "%s", symbolizer_sources(s));
    for (size_t i = 0; i < elf_symbols_count(symbols); i++) {
        const char *name;
        uint64_t start, length;
        elf_symbols_get(symbols, i, &name, &start, &length);
        if (each(ctx, name, start, length))
            break;
    }
    symbolizer_close(s);
    return 0;
}

/* The file address of the static variable `name`: from DWARF (the file's,
 * or its debug file's), else from the data objects of their symbol tables.
 * 0, or -1 with why in `message`. */
__attribute__((visibility("default"))) int memprof_elf_variable(const char *path, const char *name,
                                                               uint64_t *address, char *message, size_t size)
{
    char debug[4096];
    struct debugfile_search search;
    const char *paths[2] = { path, debugfile_find(path, debug, sizeof debug, &search) ? debug : NULL };
    for (int i = 0; i < 2 && paths[i]; i++)
        if (elf_variable_address(paths[i], name, address, message, size) == 0)
            return 0;
    for (int i = 0; i < 2 && paths[i]; i++) {
        struct elf_symbols *s = elf_symbols_read_data(paths[i], message, size);
        if (!s)
            continue;
        for (size_t k = 0; k < elf_symbols_count(s); k++) {
            const char *sym;
            uint64_t start, length;
            elf_symbols_get(s, k, &sym, &start, &length);
            if (strcmp(sym, name) == 0) {
                *address = start;
                elf_symbols_free(s);
                return 0;
            }
        }
        elf_symbols_free(s);
    }
    snprintf(message, size, "no symbol table of %s names a variable %s", path, name);
    return -1;
}

/* The address ranges of function `name`'s own copy and of every instance
 * inlined into another function, from the DWARF of the file or, when it
 * gives none (stripped: libdwarf may still open it for .eh_frame), of its
 * debug file: `each(ctx, start, end, inlined)` per range (file addresses).
 * 0, or -1 with why in `message`. */
struct counted { elf_span_fn *each; void *ctx; size_t count; };

static int count_span(void *ctx, uint64_t start, uint64_t end, int inlined)
{
    struct counted *c = ctx;
    c->count++;
    return c->each(c->ctx, start, end, inlined);
}

__attribute__((visibility("default"))) int memprof_elf_spans(const char *path, const char *name,
                                                            elf_span_fn *each, void *ctx, char *message,
                                                            size_t size)
{
    struct counted c = { each, ctx, 0 };
    if (elf_function_spans(path, name, count_span, &c, message, size) == 0 && c.count > 0)
        return 0;
    char debug[4096];
    struct debugfile_search search;
    if (!debugfile_find(path, debug, sizeof debug, &search))
        return c.count ? 0 : -1;
    return elf_function_spans(debug, name, each, ctx, message, size);
}

/* Every copy of `function` and where `parameter` is at its entry, from the
 * DWARF of the file or, when it gives none, of its debug file (file
 * addresses). 0, or -1 with why in `message`. */
struct counted_entries { elf_inline_fn *each; void *ctx; size_t count; };

static int count_entry(void *ctx, const struct inline_entry *e)
{
    struct counted_entries *c = ctx;
    c->count++;
    return c->each(c->ctx, e);
}

__attribute__((visibility("default"))) int memprof_elf_inline_entries(const char *path, const char *function,
                                                                     const char *parameter, elf_inline_fn *each,
                                                                     void *ctx, char *message, size_t size)
{
    struct counted_entries c = { each, ctx, 0 };
    if (elf_inline_entries(path, function, parameter, count_entry, &c, message, size) == 0 && c.count > 0)
        return 0;
    char debug[4096];
    struct debugfile_search search;
    if (!debugfile_find(path, debug, sizeof debug, &search))
        return c.count ? 0 : -1;
    return elf_inline_entries(debug, function, parameter, each, ctx, message, size);
}
