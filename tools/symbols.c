/* memprof symbols FILE            the function symbols memprof names code with
 * memprof symbolize FILE ADDR...  function+offset and file:line of addresses,
 *                                 with the functions inlined there
 *
 * The symbol dump of the seeds' tools, with where each part comes from: the
 * file's .symtab or .dynsym, its DWARF, or a separate debug file. */
#include "commands.h"
#include "objfile/symbolizer.h"
#include "objfile/symbols.h"
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

enum { EXIT_USAGE = 2 };

static struct symbolizer *open_or_complain(const char *path)
{
    char err[PATH_MAX + 128];
    struct symbolizer *s = symbolizer_open(path, err, sizeof err);
    if (!s)
        fprintf(stderr, "memprof: %s\n", err);
    return s;
}

int cmd_symbols(int argc, char **argv)
{
    if (argc != 1) {
        fputs("memprof: usage: memprof symbols FILE\n", stderr);
        return EXIT_USAGE;
    }
    struct symbolizer *s = open_or_complain(argv[0]);
    if (!s)
        return EXIT_USAGE;
    const struct elf_symbols *syms = symbolizer_symbols(s);
    printf("# %s\n", symbolizer_sources(s));
    for (size_t i = 0; i < elf_symbols_count(syms); i++) {
        const char *name;
        uint64_t start, size;
        elf_symbols_get(syms, i, &name, &start, &size);
        printf("%016" PRIx64 " %6" PRIu64 " %s\n", start, size, name);
    }
    symbolizer_close(s);
    return 0;
}

int cmd_symbolize(int argc, char **argv)
{
    if (argc < 2) {
        fputs("memprof: usage: memprof symbolize FILE ADDRESS... (file addresses, e.g. 0x1139)\n", stderr);
        return EXIT_USAGE;
    }
    uint64_t *addrs = calloc((size_t)argc, sizeof *addrs);
    if (!addrs)
        return EXIT_USAGE;
    for (int i = 1; i < argc; i++) {
        char *end;
        errno = 0;
        addrs[i] = strtoull(argv[i], &end, 16);
        if (errno || *end || end == argv[i]) {
            fprintf(stderr, "memprof: symbolize: '%s' is not a hexadecimal address\n", argv[i]);
            free(addrs);
            return EXIT_USAGE;
        }
    }
    struct symbolizer *s = open_or_complain(argv[0]);
    if (!s) {
        free(addrs);
        return EXIT_USAGE;
    }
    printf("# %s\n", symbolizer_sources(s));
    for (int i = 1; i < argc; i++) {
        struct symbol_info frames[SYMBOLIZER_MAX_INLINED];
        size_t n = symbolizer_frames(s, addrs[i], frames, SYMBOLIZER_MAX_INLINED);
        for (size_t f = 0; f < n; f++) {
            const char *function = demangle(frames[f].function);
            if (f == 0)
                printf("0x%" PRIx64 " ", addrs[i]);
            else
                printf("  inlined into ");
            if (!function)
                printf("??");
            else if (f + 1 == n)
                printf("%s+0x%" PRIx64, function, frames[f].offset);
            else
                printf("%s", function);
            if (frames[f].file)
                printf(" %s:%u", frames[f].file, frames[f].line);
            putchar('\n');
        }
    }
    symbolizer_close(s);
    free(addrs);
    return 0;
}
