/* The entry stub, instruction by instruction (see intercept.h):
 *
 *     push %rbp; mov %rsp, %rbp          frame pointer chain
 *     sub $FRAME, %rsp                   struct intercept_regs (16-aligned)
 *     mov %rdi..%rax, 0..48(%rsp)        the argument registers
 *     movdqu %xmm0..7, 64..176(%rsp)
 *     movabs $id, %rdi; mov %rsp, %rsi   handler(id, regs)
 *     movabs $pre, %r11; call *%r11
 *     movdqu 64..176(%rsp), %xmm0..7     the registers, as the handler left them
 *     mov 0..48(%rsp), %rdi..%rax
 *     mov %rbp, %rsp; pop %rbp
 *     jmp *original(%rip)                the original, as if called directly
 *     original: .quad 0
 *
 * On entry %rsp is 8 mod 16 (the return address); after push %rbp it is 0,
 * and FRAME is a multiple of 16, so the handler is called aligned. Only
 * caller-saved registers are used (r11 for the handler's address). */
#include "intercept.h"
#include "pool.h"
#include "../arch/x86_64/emit.h"
#include <errno.h>
#include <stddef.h>

#define FRAME ((int32_t)sizeof(struct intercept_regs))
_Static_assert(sizeof(struct intercept_regs) % 16 == 0, "the frame keeps the stack aligned");

static const struct { enum reg reg; size_t offset; } saved_regs[] = {
    { RDI, offsetof(struct intercept_regs, rdi) }, { RSI, offsetof(struct intercept_regs, rsi) },
    { RDX, offsetof(struct intercept_regs, rdx) }, { RCX, offsetof(struct intercept_regs, rcx) },
    { R8, offsetof(struct intercept_regs, r8) },   { R9, offsetof(struct intercept_regs, r9) },
    { RAX, offsetof(struct intercept_regs, rax) },
};
#define SAVED_REGS (sizeof saved_regs / sizeof *saved_regs)

static struct mem xmm_slot(int i)
{
    return MEM(RSP, (int32_t)(offsetof(struct intercept_regs, xmm) + 16 * (size_t)i));
}

/* Emit the stub for code at `pc`; returns where its original slot runs. */
static uintptr_t emit_entry_stub(struct emitter *e, uint32_t id, intercept_pre_fn *pre)
{
    emit_push(e, RBP);
    emit_mov(e, RBP, RSP);
    emit_sub_imm(e, RSP, FRAME);
    for (size_t i = 0; i < SAVED_REGS; i++)
        emit_mov_store(e, MEM(RSP, (int32_t)saved_regs[i].offset), saved_regs[i].reg);
    for (int i = 0; i < 8; i++)
        emit_movdqu_store(e, xmm_slot(i), (enum xmm)i);
    emit_mov_imm64(e, RDI, id);
    emit_mov(e, RSI, RSP);
    emit_mov_imm64(e, R11, (uint64_t)(uintptr_t)pre);
    emit_call_reg(e, R11);
    for (int i = 0; i < 8; i++)
        emit_movdqu_load(e, (enum xmm)i, xmm_slot(i));
    for (size_t i = 0; i < SAVED_REGS; i++)
        emit_mov_load(e, saved_regs[i].reg, MEM(RSP, (int32_t)saved_regs[i].offset));
    emit_mov(e, RSP, RBP);
    emit_pop(e, RBP);
    /* The slot follows the jump through it, 8-aligned. */
    uintptr_t jmp_end = emit_here(e) + 6;
    uintptr_t slot = (jmp_end + 7) & ~(uintptr_t)7;
    emit_jmp_rip(e, slot);
    while (emit_here(e) < slot)
        emit_int3(e);
    emit_quad(e, 0);
    return slot;
}

int intercept_entry_stub(uint32_t id, intercept_pre_fn *pre, uintptr_t near, struct intercept_stub *out)
{
    enum { STUB_MAX = 256 };
    struct code_chunk chunk;
    int err = pool_reserve(near, STUB_MAX, &chunk);
    if (err)
        return err;
    struct emitter e;
    emit_init(&e, chunk.write, chunk.size, chunk.exec);
    uintptr_t slot = emit_entry_stub(&e, id, pre);
    if (e.error)
        return ENOMEM;   /* STUB_MAX is too small: a bug, caught by the tests */
    *out = (struct intercept_stub){ chunk.exec, (void **)(chunk.write + (slot - chunk.exec)), e.len };
    return 0;
}
