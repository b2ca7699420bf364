/* libmemprof-elf.so: function symbols of a file on disk, for the runtime,
 * which loads this library (and with it libelf and libdwarf) only when a
 * hook needs symbols no loaded object exports (elf/disk_symbols.c). The
 * symbols come from the file's .symtab or from its separate debug file
 * (build-id, .gnu_debuglink), as the symbolizer finds them. */
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
