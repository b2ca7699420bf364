/* The decoder: Zydis, in 64-bit mode; see decode.h. */
#include "decode.h"
#include <Zydis/Zydis.h>

bool decode_insn(const void *code, size_t avail, uintptr_t pc, struct insn *out)
{
    ZydisDecoder decoder;
    ZydisDecodedInstruction in;
    if (!ZYAN_SUCCESS(ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)) ||
        !ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&decoder, NULL, code, avail, &in)))
        return false;
    *out = (struct insn){ .length = in.length };
    uintptr_t next = pc + in.length;
    if (in.raw.imm[0].is_relative) {
        out->target = next + (uintptr_t)in.raw.imm[0].value.s;
        out->field_offset = in.raw.imm[0].offset;
        bool rel32 = in.raw.imm[0].size == 32;
        if (in.mnemonic == ZYDIS_MNEMONIC_CALL && rel32)
            out->kind = INSN_CALL_REL32;
        else if (in.mnemonic == ZYDIS_MNEMONIC_JMP && rel32)
            out->kind = INSN_JMP_REL32;
        else
            out->kind = INSN_BRANCH_REL;
    } else if (in.mnemonic == ZYDIS_MNEMONIC_RET) {
        out->kind = INSN_RET;
    }
    /* ModRM mod 00, rm 101 without SIB is [rip + disp32] in 64-bit mode. */
    if ((in.attributes & ZYDIS_ATTRIB_HAS_MODRM) && in.raw.modrm.mod == 0 && in.raw.modrm.rm == 5) {
        out->rip_relative = true;
        out->rip_address = next + (uintptr_t)in.raw.disp.value;
        out->field_offset = in.raw.disp.offset;
    }
    return true;
}
