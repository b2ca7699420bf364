/* Walks a file of machine code (all instructions, then 8 bytes of data)
 * with the decoder, as if it ran at 0x400000: one line per instruction,
 * "offset length kind target field_offset" in hex (kind: call, jmp, branch,
 * ret, store, rip, other), and for a store the register and width; then, for
 * a 64-bit register load, "load DEST BASE DISP" (BASE 16: rip, DISP then the
 * address from the code's start; in decimal). emit.test compares the walk with objdump's.
 * With --same FILE: the instructions taken in pairs, "same" or "differs"
 * for each, from decode_same_operation. */
#include "arch/x86_64/decode.h"
#include <stdio.h>
#include <string.h>

#define PC 0x400000u

int main(int argc, char **argv)
{
    static unsigned char code[1 << 20];
    bool pairs = argc == 3 && strcmp(argv[1], "--same") == 0;
    FILE *f = argc == 2 || pairs ? fopen(argv[argc - 1], "rb") : NULL;
    size_t n = f ? fread(code, 1, sizeof code, f) : 0;
    if (!f || n < 8)
        return 2;
    fclose(f);
    size_t end = n - 8;
    for (size_t at = 0; pairs && at < end;) {
        struct insn a, b;
        if (!decode_insn(code + at, end - at, PC + at, &a) ||
            !decode_insn(code + at + a.length, end - at - a.length, PC + at + a.length, &b))
            return 1;
        printf("%s\n", decode_same_operation(code + at, PC + at, code + at + a.length, PC + at + a.length, 15)
                          ? "same" : "differs");
        at += a.length + b.length;
    }
    if (pairs)
        return 0;
    for (size_t at = 0; at < end;) {
        struct insn in;
        if (!decode_insn(code + at, end - at, PC + at, &in)) {
            printf("%zx invalid\n", at);
            return 1;
        }
        const char *kind = in.kind == INSN_CALL_REL32 ? "call" : in.kind == INSN_JMP_REL32 ? "jmp"
                         : in.kind == INSN_BRANCH_REL ? "branch" : in.kind == INSN_RET ? "ret"
                         : in.stores_register ? "store" : in.stores_immediate ? "storeimm"
                         : in.rip_relative ? "rip" : "other";
        uintptr_t target = in.rip_relative ? in.rip_address : in.target;
        printf("%zx %x %s %lx %x", at, in.length, kind, (unsigned long)(target ? target - PC : 0), in.field_offset);
        if (in.stores_register)
            printf(" %u %u", in.store_register, in.store_width);
        if (in.stores_immediate)
            printf(" %lld %u", (long long)in.store_immediate, in.store_width);
        struct insn_load load;
        if (decode_load(code + at, end - at, PC + at, &load))
            printf(" load %u %u %lld", load.dest, load.base,
                   (long long)(load.base == INSN_BASE_RIP ? load.address - PC : load.address));
        printf("\n");
        at += in.length;
    }
    return 0;
}
