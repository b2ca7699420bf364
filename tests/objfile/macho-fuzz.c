/* libFuzzer harness for the Mach-O reader (libprof/objfile/macho.c):
 * memprof symbols and memprof imports hand it any file a user names, so no
 * input may crash it, read out of bounds, loop without end or leak (built
 * with ASan and UBSan by macho.test, seeded with the suite's Mach-O files).
 * The ELF reader is not linked: ELF input is refused here. */
#include "objfile/binary_build.h"
#include "objfile/elf_binary.h"
#include "objfile/macho.h"
#include <stdlib.h>
#include <string.h>

int elf_binary_read(struct binary *b, const char *path, int fd, char *err, size_t errlen)
{
    (void)b, (void)path, (void)fd, (void)err, (void)errlen;
    return -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* An exact copy: a read one byte past the file is a heap overflow. */
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    static const char *const arches[] = { NULL, "arm64" };
    for (size_t k = 0; k < 2 && macho_is(copy, size); k++) {
        struct binary *b = calloc(1, sizeof *b);
        char err[400];
        if (b && macho_read(b, copy, size, arches[k], err, sizeof err) == 0) {
            /* What the commands do with it: every field read. */
            size_t sum = 0;
            for (size_t i = 0; i < binary_symbol_count(b); i++) {
                const struct binary_symbol *s = binary_symbol_at(b, i);
                sum += strlen(s->name) + strlen(s->section) + strlen(s->library) + (size_t)s->size;
            }
            const struct binary_import *imports;
            size_t n;
            const char *why;
            if (binary_imports(b, &imports, &n, &why))
                for (size_t i = 0; i < n; i++)
                    sum += strlen(imports[i].symbol) + strlen(imports[i].library) + strlen(imports[i].slot_kind) +
                           strlen(imports[i].slot_section) + strlen(imports[i].stub_section);
            else
                sum += strlen(why);
            __asm__ volatile("" ::"r"(sum));
        } else if (b && (!*err || strchr(err, '\n'))) {
            __builtin_trap();   /* a refusal always says why, in one line */
        }
        binary_close(b);
    }
    free(copy);
    return 0;
}
