/* The relocator (libprof/arch/x86_64/relocate.c) on relocate-reference.s:
 *
 *   relocate-check CODE.bin LENGTH OUT.bin [far]
 *
 * moves the instructions of the first LENGTH bytes of CODE.bin, as if they
 * ran at 0x400000, one at a time into code that runs at 0x10000000 (with
 * "far": 3 GiB away, beyond a rel32), writes that code to OUT.bin and says
 * "moved OFFSET" or "refused OFFSET: WHY" for each. Then, on the same code
 * in memory, whether a branch lands inside the bytes a patch at the start
 * would take: "into 14: from OFFSET", "into 7: none". relocate.test
 * compares OUT.bin with the original through objdump. */
#include "arch/x86_64/relocate.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FROM 0x400000u

int main(int argc, char **argv)
{
    static unsigned char code[1 << 16], out[1 << 16];
    FILE *f = argc >= 4 ? fopen(argv[1], "rb") : NULL;
    size_t n = f ? fread(code, 1, sizeof code, f) : 0, length = argc >= 4 ? strtoul(argv[2], NULL, 0) : 0;
    if (!f || !length || length > n)
        return 2;
    fclose(f);
    uintptr_t to = argc == 5 && strcmp(argv[4], "far") == 0 ? FROM + (3ull << 30) : 0x10000000u;
    struct emitter e;
    emit_init(&e, out, sizeof out, to);
    for (size_t at = 0; at < length;) {
        struct relocation r;
        struct emitter attempt = e;
        if (relocate(&attempt, FROM + at, code + at, n - at, 1, &r) == 0) {
            e = attempt;
            printf("moved %zx\n", at);
            at += r.moved;
        } else {
            struct insn in;
            printf("refused %zx: %s\n", at, r.why);
            if (!decode_insn(code + at, n - at, FROM + at, &in))
                return 1;
            at += in.length;
        }
    }
    FILE *o = fopen(argv[3], "wb");
    if (!o || fwrite(out, 1, e.len, o) != e.len || fclose(o) != 0)
        return 1;
    /* The same code where it is, in this process: a patch at its start. */
    struct code_range range = { (uintptr_t)code, length };
    for (size_t take = 7; take <= 14; take += 7) {
        uintptr_t from;
        if (relocate_branch_into(&range, 1, (uintptr_t)code, take, &from))
            printf("into %zu: from %lx\n", take, (unsigned long)(from - (uintptr_t)code));
        else
            printf("into %zu: none\n", take);
    }
    return 0;
}
