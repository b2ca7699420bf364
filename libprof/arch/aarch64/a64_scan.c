/* code_scan.h on AArch64: the calls and tail jumps a function makes, every
 * BL and B (imm26) of its 4-byte instructions, and where each goes. Fixed
 * width, aligned instructions decode exactly: no byte is read as the wrong
 * instruction. No disassembler is loaded into the target for it (Capstone's
 * relocations alone cost a start 6 ms): BL, B, ADRP and LDR are read from
 * their encodings (the Arm ARM's A64 instruction classes). */
#include "../code_scan.h"
#include <string.h>

enum {
    INSN_BYTES = 4,
    BRANCH_IMM26_MASK = 0x7c000000,    /* B and BL: bits 30-26 = 00101, bit 31 = link */
    BRANCH_IMM26 = 0x14000000,
    ADRP_MASK = 0x9f000000,
    ADRP = 0x90000000,
    LDR_X_UIMM_MASK = 0xffc00000,      /* LDR Xt, [Xn, #imm12 * 8] */
    LDR_X_UIMM = 0xf9400000,
    HINT_MASK = 0xfffff01f,            /* NOP, BTI, PACIASP...: the hint space */
    HINT = 0xd503201f,
};

static uint32_t insn_at(uintptr_t pc)
{
    uint32_t insn;
    memcpy(&insn, (const void *)pc, sizeof insn);
    return insn;
}

/* The low `bits` of `v` as a signed number. */
static int64_t sign_extend(uint64_t v, unsigned bits)
{
    return (int64_t)(v << (64 - bits)) >> (64 - bits);
}

int call_scan(uintptr_t start, uintptr_t end, call_scan_visit_fn *visit, void *ctx)
{
    for (uintptr_t pc = (start + INSN_BYTES - 1) & ~(uintptr_t)(INSN_BYTES - 1); pc + INSN_BYTES <= end;
         pc += INSN_BYTES) {
        uint32_t insn = insn_at(pc);
        if ((insn & BRANCH_IMM26_MASK) != BRANCH_IMM26)
            continue;
        uintptr_t target = pc + (uintptr_t)(sign_extend(insn & 0x03ffffff, 26) * INSN_BYTES);
        int rc = visit(ctx, pc, target);
        if (rc)
            return rc;
    }
    return 0;
}

int call_scan_plt_slot(uintptr_t pc, uintptr_t *slot)
{
    uint32_t insn = insn_at(pc);
    if ((insn & HINT_MASK) == HINT)
        insn = insn_at(pc += INSN_BYTES);
    if ((insn & ADRP_MASK) != ADRP)
        return 0;
    unsigned page_reg = insn & 31;
    uint64_t immediate = ((uint64_t)(insn >> 5) & 0x7ffff) << 2 | ((insn >> 29) & 3);
    uintptr_t page = (pc & ~(uintptr_t)0xfff) + (uintptr_t)(sign_extend(immediate, 21) << 12);
    uint32_t load = insn_at(pc + INSN_BYTES);
    if ((load & LDR_X_UIMM_MASK) != LDR_X_UIMM || ((load >> 5) & 31) != page_reg)
        return 0;
    *slot = page + ((load >> 10) & 0xfff) * 8;
    return 1;
}
