/* code_scan.h on x86-64: the calls and tail jumps a function makes, found
 * without decoding it: every byte that could open a `call rel32` or `jmp
 * rel32` (E8, E9), and where that instruction would go. A superset of what
 * the decoder's walk reports as INSN_CALL_REL32 and INSN_JMP_REL32: the
 * caller narrows it (to functions' first bytes, say), which leaves, rarely, a
 * byte inside another instruction whose next four happen to name such a
 * place. Zydis would spend about 1,000 instructions on each instruction. */
#include "../code_scan.h"
#include <string.h>

enum {
    OPCODE_CALL_REL32 = 0xE8,
    OPCODE_JMP_REL32 = 0xE9,
    REL32_INSN_LENGTH = 5,   /* the opcode and its 32-bit displacement */
};

int call_scan(uintptr_t start, uintptr_t end, call_scan_visit_fn *visit, void *ctx)
{
    const uint8_t *code = (const uint8_t *)start;
    for (size_t at = 0; end - start >= REL32_INSN_LENGTH && at <= end - start - REL32_INSN_LENGTH; at++) {
        if (code[at] != OPCODE_CALL_REL32 && code[at] != OPCODE_JMP_REL32)
            continue;
        int32_t displacement;
        memcpy(&displacement, code + at + 1, sizeof displacement);
        uintptr_t next = start + at + REL32_INSN_LENGTH;
        int rc = visit(ctx, start + at, next + (uintptr_t)(intptr_t)displacement);
        if (rc)
            return rc;
    }
    return 0;
}

/* A PLT entry's first instruction, after IBT's endbr64 in a .plt.sec entry,
 * is `jmp *slot(%rip)` (with MPX's bnd prefix under binutils' -z bndplt):
 * matched by its bytes, which cost nothing beside the two decodes Zydis
 * spent on each of the ~270 callees the wrappers' scan asks about at every
 * start (0.3 ms). tests/call-scan-check holds it to the decoder. */
enum {
    PREFIX_BND = 0xF2,
    OPCODE_GROUP5 = 0xFF,          /* inc, dec, call, jmp, push r/m: ModRM's reg field says which */
    MODRM_JMP_RIP_DISP32 = 0x25,   /* mod 00, reg 4 (jmp near), rm 101: [rip + disp32] */
    DISP32_BYTES = 4,
};
static const uint8_t endbr64[] = { 0xF3, 0x0F, 0x1E, 0xFA };

int call_scan_plt_slot(uintptr_t pc, uintptr_t *slot)
{
    const uint8_t *code = (const uint8_t *)pc;
    if (memcmp(code, endbr64, sizeof endbr64) == 0)
        code += sizeof endbr64;
    if (code[0] == PREFIX_BND)
        code++;
    if (code[0] != OPCODE_GROUP5 || code[1] != MODRM_JMP_RIP_DISP32)
        return 0;
    int32_t displacement;
    memcpy(&displacement, code + 2, sizeof displacement);
    *slot = (uintptr_t)(code + 2 + DISP32_BYTES) + (uintptr_t)(intptr_t)displacement;
    return 1;
}
