/* code_scan.h on x86-64: the calls and tail jumps a function makes, found
 * without decoding it: every byte that could open a `call rel32` or `jmp
 * rel32` (E8, E9), and where that instruction would go. A superset of what
 * the decoder's walk reports as INSN_CALL_REL32 and INSN_JMP_REL32: the
 * caller narrows it (to functions' first bytes, say), which leaves, rarely, a
 * byte inside another instruction whose next four happen to name such a
 * place. Zydis would spend about 1,000 instructions on each instruction. */
#include "../code_scan.h"
#include "decode.h"
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

/* An entry's jump through its slot is rip-relative, first or after endbr64. */
int call_scan_plt_slot(uintptr_t pc, uintptr_t *slot)
{
    struct insn insn;
    for (int i = 0; i < 2; i++, pc += insn.length) {
        if (!decode_insn((const void *)pc, 16, pc, &insn))
            return -1;
        if (insn.rip_relative) {
            *slot = insn.rip_address;
            return 1;
        }
    }
    return 0;
}
