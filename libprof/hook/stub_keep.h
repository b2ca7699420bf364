/* What an inline-site stub keeps around its handler call (store stubs and
 * entry stubs): it runs in the middle of a function that expects every
 * register, the flags and the red zone below its stack pointer unchanged.
 *
 *     lea -128(%rsp), %rsp               over the red zone the function may use
 *     push %rbp; mov %rsp, %rbp
 *     push %rax ... %r11                 the caller-saved registers
 *     lahf; seto %al; push %rax          the arithmetic flags (not pushfq: it
 *                                        would keep a debugger's trap flag set)
 *     and $-16, %rsp; sub $256, %rsp; movdqu %xmm0..15
 *     ... the handler's arguments and call ...
 *     movdqu %xmm0..15; lea -80(%rbp), %rsp
 *     pop %rax; add $0x7f, %al; sahf     OF, then SF ZF AF PF CF back
 *     pop %r11 ... %rax; pop %rbp; lea 128(%rsp), %rsp
 *
 * Between the two, a caller-saved register as the function had it is at
 * %rbp - 8 * (its index in stub_kept + 1), %rbp's own at (%rbp), %rsp's is
 * %rbp + 8 + 128. */
#ifndef MEMPROF_HOOK_STUB_KEEP_H
#define MEMPROF_HOOK_STUB_KEEP_H
#include "../arch/x86_64/emit.h"
#include <stddef.h>

#define STUB_RED_ZONE 128
static const enum reg stub_kept[] = { RAX, RCX, RDX, RSI, RDI, R8, R9, R10, R11 };
#define STUB_KEPT (sizeof stub_kept / sizeof *stub_kept)

static inline void stub_keep_begin(struct emitter *e)
{
    emit_lea(e, RSP, MEM(RSP, -STUB_RED_ZONE));
    emit_push(e, RBP);
    emit_mov(e, RBP, RSP);
    for (size_t i = 0; i < STUB_KEPT; i++)
        emit_push(e, stub_kept[i]);
    emit_lahf(e);
    emit_seto_al(e);
    emit_push(e, RAX);
    emit_and_imm(e, RSP, -16);
    emit_sub_imm(e, RSP, 16 * 16);
    for (int x = 0; x < 16; x++)
        emit_movdqu_store(e, MEM(RSP, 16 * x), (enum xmm)x);
}

static inline void stub_keep_end(struct emitter *e)
{
    for (int x = 0; x < 16; x++)
        emit_movdqu_load(e, (enum xmm)x, MEM(RSP, 16 * x));
    emit_lea(e, RSP, MEM(RBP, -(int32_t)(8 * (STUB_KEPT + 1))));
    emit_pop(e, RAX);
    emit_add_al_imm(e, 0x7f);   /* OF set if al was 1 */
    emit_sahf(e);
    for (size_t i = STUB_KEPT; i-- > 0;)
        emit_pop(e, stub_kept[i]);
    emit_pop(e, RBP);
    emit_lea(e, RSP, MEM(RSP, STUB_RED_ZONE));
}
#endif
