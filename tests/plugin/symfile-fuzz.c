/* libFuzzer harness for the JIT reader's symfile parser: GDB hands the reader
 * whatever any JIT registered, so no input may crash it, read out of bounds
 * or leak (built with ASan and UBSan by symfile-fuzz.test). */
#include "symfile.h"
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct symfile s;
    char why[160];
    if (!symfile_parse(data, size, &s, why, sizeof why))
        return 0;
    /* What the unwinder does with a parsed symfile: look up every stub's
     * first and last byte, and the bytes around each. */
    for (uint32_t i = 0; i < s.header.stub_count; i++) {
        const struct jit_symfile_stub *stub = &s.stubs[i];
        uint64_t pcs[] = { stub->start - 1, stub->start, stub->start + stub->size - 1, stub->start + stub->size };
        for (size_t j = 0; j < sizeof pcs / sizeof *pcs; j++) {
            const struct jit_symfile_stub *found = symfile_stub_at(&s, pcs[j]);
            if (found && !symfile_range_at(&s, found, pcs[j]))
                __builtin_trap();   /* a checked stub's ranges cover it */
        }
    }
    symfile_free(&s);
    return 0;
}
