/* The decoder: Zydis, in 64-bit mode; see decode.h. */
#include "decode.h"
#include "../../util/maps.h"
#include <Zydis/Zydis.h>

/* mov %reg or $imm, [rip + disp32]: the first operand memory, the second a
 * 32- or 64-bit general register or an immediate. */
static void find_register_store(const ZydisDecoder *decoder, const ZydisDecoderContext *context,
                                const ZydisDecodedInstruction *in, struct insn *out)
{
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeOperands(decoder, context, in, ops, in->operand_count_visible)))
        return;
    if (ops[0].type != ZYDIS_OPERAND_TYPE_MEMORY || ops[0].mem.base != ZYDIS_REGISTER_RIP)
        return;
    if (ops[1].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && (ops[0].size == 64 || ops[0].size == 32)) {
        out->stores_immediate = true;
        out->store_immediate = ops[1].imm.value.s;
        out->store_width = (uint8_t)(ops[0].size / 8);
        return;
    }
    if (ops[1].type != ZYDIS_OPERAND_TYPE_REGISTER)
        return;
    ZydisRegisterClass class = ZydisRegisterGetClass(ops[1].reg.value);
    if (class != ZYDIS_REGCLASS_GPR64 && class != ZYDIS_REGCLASS_GPR32)
        return;
    out->stores_register = true;
    out->store_register = (uint8_t)ZydisRegisterGetId(ops[1].reg.value);
    out->store_width = class == ZYDIS_REGCLASS_GPR64 ? 8 : 4;
}

bool decode_insn(const void *code, size_t avail, uintptr_t pc, struct insn *out)
{
    ZydisDecoder decoder;
    ZydisDecoderContext context;
    ZydisDecodedInstruction in;
    /* Minimal mode first (lengths, the raw fields, relative targets: what
     * walking code needs, at a fraction of the cost); a full decode only
     * for a store's operands. */
    if (!ZYAN_SUCCESS(ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)) ||
        !ZYAN_SUCCESS(ZydisDecoderEnableMode(&decoder, ZYDIS_DECODER_MODE_MINIMAL, ZYAN_TRUE)) ||
        !ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&decoder, &context, code, avail, &in)))
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
        if (out->kind == INSN_BRANCH_REL) {
            /* jcc: 70+cc (rel8) or 0F 80+cc (rel32); jmp rel8: EB. */
            bool one_byte_map = in.opcode_map == ZYDIS_OPCODE_MAP_DEFAULT;
            out->is_jcc = (one_byte_map && in.opcode >= 0x70 && in.opcode <= 0x7F) ||
                          (in.opcode_map == ZYDIS_OPCODE_MAP_0F && in.opcode >= 0x80 && in.opcode <= 0x8F);
            out->condition = (uint8_t)(in.opcode & 0x0F);
            out->is_jmp8 = one_byte_map && in.opcode == 0xEB;
        }
    } else if (in.mnemonic == ZYDIS_MNEMONIC_RET) {
        out->kind = INSN_RET;
    } else if (in.meta.category == ZYDIS_CATEGORY_CALL) {
        out->kind = INSN_CALL_INDIRECT;
    } else if (in.meta.category == ZYDIS_CATEGORY_UNCOND_BR) {
        out->kind = INSN_JMP_INDIRECT;
    }
    /* ModRM mod 00, rm 101 without SIB is [rip + disp32] in 64-bit mode. */
    if ((in.attributes & ZYDIS_ATTRIB_HAS_MODRM) && in.raw.modrm.mod == 0 && in.raw.modrm.rm == 5) {
        out->rip_relative = true;
        out->rip_address = next + (uintptr_t)in.raw.disp.value;
        out->field_offset = in.raw.disp.offset;
        out->rip_field_offset = in.raw.disp.offset;
        if (in.mnemonic == ZYDIS_MNEMONIC_MOV && ZYAN_SUCCESS(ZydisDecoderEnableMode(&decoder, ZYDIS_DECODER_MODE_MINIMAL, ZYAN_FALSE)) &&
            ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&decoder, &context, code, avail, &in)) &&
            in.operand_count_visible == 2)
            find_register_store(&decoder, &context, &in, out);
    }
    return true;
}

bool decode_load(const void *code, size_t avail, uintptr_t pc, struct insn_load *out)
{
    ZydisDecoder decoder;
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    if (!ZYAN_SUCCESS(ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)) ||
        !ZYAN_SUCCESS(ZydisDecoderDecodeFull(&decoder, code, avail, &in, ops)))
        return false;
    if (in.mnemonic != ZYDIS_MNEMONIC_MOV || in.operand_count_visible != 2 ||
        ops[0].type != ZYDIS_OPERAND_TYPE_REGISTER || ops[1].type != ZYDIS_OPERAND_TYPE_MEMORY ||
        ZydisRegisterGetClass(ops[0].reg.value) != ZYDIS_REGCLASS_GPR64 || ops[1].size != 64 ||
        ops[1].mem.index != ZYDIS_REGISTER_NONE ||
        (ops[1].mem.segment != ZYDIS_REGISTER_DS && ops[1].mem.segment != ZYDIS_REGISTER_SS))
        return false;
    *out = (struct insn_load){ .length = in.length, .dest = (uint8_t)ZydisRegisterGetId(ops[0].reg.value) };
    if (ops[1].mem.base == ZYDIS_REGISTER_RIP) {
        out->base = INSN_BASE_RIP;
        out->address = pc + in.length + (uintptr_t)ops[1].mem.disp.value;
    } else if (ZydisRegisterGetClass(ops[1].mem.base) == ZYDIS_REGCLASS_GPR64) {
        out->base = (uint8_t)ZydisRegisterGetId(ops[1].mem.base);
        out->address = (uintptr_t)ops[1].mem.disp.value;
    } else {
        return false;
    }
    return true;
}

enum frame_setup decode_frame_setup(const void *code, size_t avail, uint8_t *length)
{
    ZydisDecoder decoder;
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    if (!ZYAN_SUCCESS(ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)) ||
        !ZYAN_SUCCESS(ZydisDecoderDecodeFull(&decoder, code, avail, &in, ops)))
        return FRAME_OTHER;
    *length = in.length;
    const ZydisDecodedOperand *a = &ops[0], *b = &ops[1];
    bool two = in.operand_count_visible == 2;
    switch (in.mnemonic) {
    case ZYDIS_MNEMONIC_ENDBR64:
        return FRAME_ENDBR;
    case ZYDIS_MNEMONIC_PUSH:
        return a->type == ZYDIS_OPERAND_TYPE_REGISTER && ZydisRegisterGetClass(a->reg.value) == ZYDIS_REGCLASS_GPR64
                   ? FRAME_PUSH : FRAME_OTHER;
    case ZYDIS_MNEMONIC_SUB:
        return two && a->type == ZYDIS_OPERAND_TYPE_REGISTER && a->reg.value == ZYDIS_REGISTER_RSP &&
                       b->type == ZYDIS_OPERAND_TYPE_IMMEDIATE
                   ? FRAME_RSP_LOWERED : FRAME_OTHER;
    case ZYDIS_MNEMONIC_MOV:
        if (two && a->type == ZYDIS_OPERAND_TYPE_REGISTER && a->reg.value == ZYDIS_REGISTER_RBP &&
            b->type == ZYDIS_OPERAND_TYPE_REGISTER && b->reg.value == ZYDIS_REGISTER_RSP)
            return FRAME_RBP_FROM_RSP;
        __attribute__((fallthrough));   /* else perhaps a spill */
    case ZYDIS_MNEMONIC_MOVSS:
    case ZYDIS_MNEMONIC_MOVSD:
    case ZYDIS_MNEMONIC_MOVQ:
    case ZYDIS_MNEMONIC_MOVD:
    case ZYDIS_MNEMONIC_MOVAPS:
    case ZYDIS_MNEMONIC_MOVUPS:
        return two && a->type == ZYDIS_OPERAND_TYPE_MEMORY && a->mem.base == ZYDIS_REGISTER_RBP &&
                       a->mem.index == ZYDIS_REGISTER_NONE && b->type == ZYDIS_OPERAND_TYPE_REGISTER
                   ? FRAME_SPILL : FRAME_OTHER;
    default:
        return FRAME_OTHER;
    }
}

uint8_t decode_nop(const void *code, size_t avail)
{
    ZydisDecoder decoder;
    ZydisDecodedInstruction in;
    if (!ZYAN_SUCCESS(ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)) ||
        !ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&decoder, NULL, code, avail, &in)))
        return 0;
    return in.mnemonic == ZYDIS_MNEMONIC_NOP ? in.length : 0;
}

/* One operand's kind, width and constant parts, its registers left out. */
static bool same_operand(const ZydisDecodedOperand *a, uintptr_t end_a, const ZydisDecodedOperand *b,
                         uintptr_t end_b)
{
    if (a->type != b->type || a->size != b->size || a->visibility != b->visibility)
        return false;
    switch (a->type) {
    case ZYDIS_OPERAND_TYPE_MEMORY:
        if ((a->mem.base == ZYDIS_REGISTER_RIP) != (b->mem.base == ZYDIS_REGISTER_RIP))
            return false;
        if (a->mem.base == ZYDIS_REGISTER_RIP)   /* the same address, from two places */
            return end_a + (uintptr_t)a->mem.disp.value == end_b + (uintptr_t)b->mem.disp.value;
        return a->mem.disp.value == b->mem.disp.value && a->mem.scale == b->mem.scale &&
               (a->mem.base == ZYDIS_REGISTER_NONE) == (b->mem.base == ZYDIS_REGISTER_NONE) &&
               (a->mem.index == ZYDIS_REGISTER_NONE) == (b->mem.index == ZYDIS_REGISTER_NONE) &&
               a->mem.segment == b->mem.segment;
    case ZYDIS_OPERAND_TYPE_IMMEDIATE:
        return a->imm.value.u == b->imm.value.u;
    case ZYDIS_OPERAND_TYPE_REGISTER:
        return ZydisRegisterGetClass(a->reg.value) == ZydisRegisterGetClass(b->reg.value);
    default:
        return false;   /* pointers and the like: not what a copy of a statement starts with */
    }
}

bool decode_same_operation(const void *a, uintptr_t pc_a, const void *b, uintptr_t pc_b, size_t avail)
{
    ZydisDecoder decoder;
    ZydisDecodedInstruction in_a, in_b;
    ZydisDecodedOperand ops_a[ZYDIS_MAX_OPERAND_COUNT], ops_b[ZYDIS_MAX_OPERAND_COUNT];
    if (!ZYAN_SUCCESS(ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)) ||
        !ZYAN_SUCCESS(ZydisDecoderDecodeFull(&decoder, a, avail, &in_a, ops_a)) ||
        !ZYAN_SUCCESS(ZydisDecoderDecodeFull(&decoder, b, avail, &in_b, ops_b)))
        return false;
    if (in_a.mnemonic != in_b.mnemonic || in_a.operand_count != in_b.operand_count ||
        in_a.operand_width != in_b.operand_width || in_a.meta.branch_type != ZYDIS_BRANCH_TYPE_NONE)
        return false;
    for (unsigned i = 0; i < in_a.operand_count; i++)
        if (!same_operand(&ops_a[i], pc_a + in_a.length, &ops_b[i], pc_b + in_b.length))
            return false;
    return true;
}

bool decode_has_effect(const void *code, size_t avail)
{
    ZydisDecoder decoder;
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    if (!ZYAN_SUCCESS(ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)) ||
        !ZYAN_SUCCESS(ZydisDecoderDecodeFull(&decoder, code, avail, &in, ops)))
        return true;   /* not known: counted as one */
    if (in.meta.category == ZYDIS_CATEGORY_CALL)
        return true;
    for (unsigned i = 0; i < in.operand_count_visible; i++)
        if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY && (ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) &&
            ops[i].mem.type == ZYDIS_MEMOP_TYPE_MEM)
            return true;
    return false;
}

int decode_ranges_in(const struct maps *maps, const struct code_range *ranges, size_t n, size_t margin,
                     decode_visit_fn *visit, void *ctx)
{
    int rc = 0;
    for (size_t r = 0; r < n && !rc; r++) {
        uintptr_t pc = ranges[r].start, end = ranges[r].start + ranges[r].size;
        if (!maps_readable(maps, pc - margin, ranges[r].size + 2 * margin))
            continue;
        struct insn in;
        while (!rc && pc < end && decode_insn((const void *)pc, end - pc, pc, &in)) {
            rc = visit(ctx, pc, &in);
            pc += in.length;
        }
    }
    return rc;
}

int decode_ranges(const struct code_range *ranges, size_t n, size_t margin, decode_visit_fn *visit, void *ctx)
{
    struct maps maps;
    int rc = maps_load(&maps);
    if (rc)
        return rc;
    rc = decode_ranges_in(&maps, ranges, n, margin, visit, ctx);
    maps_release(&maps);
    return rc;
}
