/* A DWARF place's value into a register (see place_load.h). An expression
 * is run as DWARF defines it, on a stack: the machine's, below the stub's
 * pushes, each operation popping its operands into %rax and %rcx. */
#include "place_load.h"
#include "stub_keep.h"
#include <dwarf.h>

/* DWARF's register numbers (0 rax, 1 rdx, 2 rcx, 3 rbx, 4 rsi, 5 rdi, 6 rbp,
 * 7 rsp, 8-15 r8-r15) as the emitter's. */
static const enum reg dwarf_regs[16] = { RAX, RDX, RCX, RBX, RSI, RDI, RBP, RSP,
                                         R8, R9, R10, R11, R12, R13, R14, R15 };

/* DWARF register `dwarf` as the code had it into `to`: a caller-saved one
 * from where the stub pushed it, %rbp from its push, %rsp from %rbp, the
 * others where they are. */
static void load_register(struct emitter *e, enum reg to, unsigned dwarf)
{
    enum reg r = dwarf_regs[dwarf & 15];
    for (size_t i = 0; i < STUB_KEPT; i++)
        if (stub_kept[i] == r) {
            emit_mov_load(e, to, MEM(RBP, -8 * (int32_t)(i + 1)));
            return;
        }
    if (r == RBP)
        emit_mov_load(e, to, MEM(RBP, 0));
    else if (r == RSP)
        emit_lea(e, to, MEM(RBP, 8 + STUB_RED_ZONE));
    else if (r != to)
        emit_mov(e, to, r);
}

/* %rax += offset, whatever its size. */
static void add_offset(struct emitter *e, int64_t offset)
{
    if (offset >= INT32_MIN && offset <= INT32_MAX) {
        if (offset)
            emit_lea(e, RAX, MEM(RAX, (int32_t)offset));
    } else {
        emit_mov_imm64(e, RCX, (uint64_t)offset);
        emit_add(e, RAX, RCX);
    }
}

/* One operation (inline_entries.c accepted it and checked the depth). */
static void run_op(struct emitter *e, const struct place_op *op)
{
    uint8_t a = op->atom;
    if (a >= DW_OP_lit0 && a <= DW_OP_lit31) {
        emit_mov_imm64(e, RAX, a - DW_OP_lit0);
        emit_push(e, RAX);
    } else if (a >= DW_OP_const1u && a <= DW_OP_consts) {
        emit_mov_imm64(e, RAX, op->operand);
        emit_push(e, RAX);
    } else if ((a >= DW_OP_breg0 && a <= DW_OP_breg15) || a == DW_OP_bregx) {
        load_register(e, RAX, a == DW_OP_bregx ? (unsigned)op->operand : (unsigned)(a - DW_OP_breg0));
        add_offset(e, (int64_t)(a == DW_OP_bregx ? op->operand2 : op->operand));
        emit_push(e, RAX);
    } else if (a == DW_OP_dup || a == DW_OP_over || a == DW_OP_pick) {
        int32_t index = a == DW_OP_dup ? 0 : a == DW_OP_over ? 1 : (int32_t)op->operand;
        emit_mov_load(e, RAX, MEM(RSP, 8 * index));
        emit_push(e, RAX);
    } else if (a == DW_OP_drop) {
        emit_pop(e, RAX);
    } else if (a == DW_OP_swap) {
        emit_pop(e, RAX);
        emit_pop(e, RCX);
        emit_push(e, RAX);
        emit_push(e, RCX);
    } else if (a == DW_OP_plus_uconst || a == DW_OP_neg || a == DW_OP_not || a == DW_OP_deref) {
        emit_pop(e, RAX);
        if (a == DW_OP_plus_uconst)
            add_offset(e, (int64_t)op->operand);
        else if (a == DW_OP_neg)
            emit_neg(e, RAX);
        else if (a == DW_OP_not)
            emit_not(e, RAX);
        else
            emit_mov_load(e, RAX, MEM(RAX, 0));
        emit_push(e, RAX);
    } else {   /* binary: the second entry op the top */
        emit_pop(e, RCX);
        emit_pop(e, RAX);
        switch (a) {
        case DW_OP_plus: emit_add(e, RAX, RCX); break;
        case DW_OP_minus: emit_sub(e, RAX, RCX); break;
        case DW_OP_mul: emit_imul(e, RAX, RCX); break;
        case DW_OP_and: emit_and(e, RAX, RCX); break;
        case DW_OP_or: emit_or(e, RAX, RCX); break;
        case DW_OP_xor: emit_xor(e, RAX, RCX); break;
        case DW_OP_shl: emit_shl_cl(e, RAX); break;
        case DW_OP_shr: emit_shr_cl(e, RAX); break;
        case DW_OP_shra: emit_sar_cl(e, RAX); break;
        }
        emit_push(e, RAX);
    }
}

void place_load(struct emitter *e, enum reg to, const struct inline_entry *w)
{
    switch (w->place) {
    case PARAM_CONSTANT:
        emit_mov_imm64(e, to, w->value);
        return;
    case PARAM_REGISTER:
    case PARAM_REGISTER_MEMORY:
        load_register(e, to, w->reg);
        if (w->place == PARAM_REGISTER_MEMORY)
            emit_mov_load(e, to, MEM(to, (int32_t)w->offset));
        return;
    case PARAM_EXPRESSION:
        for (unsigned i = 0; i < w->op_count; i++)
            run_op(e, &w->ops[i]);
        emit_pop(e, to);
        if (!w->is_value)   /* a memory location: the value is at the address */
            emit_mov_load(e, to, MEM(to, 0));
        return;
    default:
        return;   /* never asked: entry_site.c refuses the others first */
    }
}
