/* The emitter's output for every instruction form it has, written to a file
 * that emit.test compares byte for byte with GNU as's assembly of
 * emit-reference.s (the same instructions, in the same order). With
 * "errors", the sticky errors instead, one per line. */
#include "arch/x86_64/emit.h"
#include <stdio.h>
#include <string.h>

#define PC 0x400000u

static const struct mem bases_and_disps[] = {
    MEM(RAX, 0), MEM(RSP, 0), MEM(RBP, 0), MEM(R12, 0), MEM(R13, 0), MEM(R15, 0),
    MEM(RSP, 8), MEM(RBP, -8), MEM(R12, 0x7f), MEM(RDI, -0x80),
    MEM(RSP, 0x80), MEM(RBX, -0x81), MEM(R13, 0x1000), MEM(RSI, -0x12345678),
};
#define N_MEMS (sizeof bases_and_disps / sizeof *bases_and_disps)
static const int32_t immediates[] = { 8, -8, 127, -128, 128, 0x1000, -0x12345678 };
#define N_IMMS (sizeof immediates / sizeof *immediates)

static void emit_all(struct emitter *e)
{
    for (int r = RAX; r <= R15; r++)
        emit_push(e, r);
    for (int r = R15; r >= RAX; r--)
        emit_pop(e, r);
    for (size_t i = 0; i < N_IMMS; i++)
        emit_push_imm(e, immediates[i]);
    emit_pushfq(e);
    emit_popfq(e);
    emit_lahf(e);
    emit_sahf(e);
    emit_seto_al(e);
    emit_add_al_imm(e, 0x7f);
    emit_add_al_imm(e, -1);
    emit_mov_imm64(e, RAX, 0x1122334455667788u);
    emit_mov_imm64(e, R11, 0xfedcba9876543210u);
    for (int r = RAX; r <= R15; r++) {
        emit_mov(e, r, (r + 5) % 16);
        emit_mov(e, (r + 9) % 16, r);
    }
    for (size_t i = 0; i < N_MEMS; i++) {
        emit_mov_store(e, bases_and_disps[i], RCX);
        emit_mov_store(e, bases_and_disps[i], R9);
        emit_mov_load(e, RDX, bases_and_disps[i]);
        emit_mov_load(e, R10, bases_and_disps[i]);
        emit_lea(e, RDI, bases_and_disps[i]);
        emit_lea(e, R14, bases_and_disps[i]);
        emit_movdqu_store(e, bases_and_disps[i], XMM0);
        emit_movdqu_store(e, bases_and_disps[i], XMM15);
        emit_movdqu_load(e, XMM7, bases_and_disps[i]);
        emit_movdqu_load(e, XMM8, bases_and_disps[i]);
    }
    static const enum reg arith_regs[] = { RAX, RSP, R11 };
    for (size_t r = 0; r < 3; r++)
        for (size_t i = 0; i < N_IMMS; i++) {
            emit_add_imm(e, arith_regs[r], immediates[i]);
            emit_sub_imm(e, arith_regs[r], immediates[i]);
            emit_and_imm(e, arith_regs[r], immediates[i]);
        }
    /* Two registers, and the one-register forms. */
    static const enum reg pairs[][2] = { { RAX, RCX }, { R11, RAX }, { RDX, R10 }, { R13, R14 } };
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        enum reg dst = pairs[i][0], src = pairs[i][1];
        emit_add(e, dst, src);
        emit_sub(e, dst, src);
        emit_and(e, dst, src);
        emit_or(e, dst, src);
        emit_xor(e, dst, src);
        emit_imul(e, dst, src);
        emit_shl_cl(e, dst);
        emit_shr_cl(e, dst);
        emit_sar_cl(e, dst);
        emit_neg(e, dst);
        emit_not(e, dst);
    }
    /* Thread-local arithmetic, and a sampled free's filter: its index, its byte, its jump table. */
    emit_sub_fs(e, 0x10, RDI);
    emit_sub_fs(e, -0x28, R9);
    emit_add_fs(e, 0x10, RDI);
    emit_add_fs(e, -0x28, R9);
    emit_shr32_imm(e, RAX, 17);
    emit_shr32_imm(e, R10, 1);
    emit_movzbl_load_table(e, RAX, 0x40000000, RAX);
    emit_movzbl_load_table(e, R9, 0x1234, R12);
    emit_movzbl_load_table(e, RDX, 0x7fffffff, RBP);
    emit_movzbl_load_table(e, R15, 0x10, R8);
    emit_jmp_table(e, 0x40008000, RAX);
    emit_jmp_table(e, 0x10, R13);
    emit_jmp_table(e, 0x7ffffff8, RBP);
    /* Relative operands: targets given as offsets from the instruction's
     * start, as the reference writes them (". + N"). */
    emit_call(e, emit_here(e) + 0x1239);
    emit_jmp(e, emit_here(e) - 0x1000);
    for (unsigned c = 0; c < 16; c++)   /* jo ... jg, each 0x200 on (forced to rel32 in the reference) */
        emit_jcc(e, c, emit_here(e) + 0x200);
    emit_call_rip(e, emit_here(e) + 6 + 0x100);
    emit_jmp_rip(e, emit_here(e) + 6 - 0x40);
    emit_mov_load_rip(e, RAX, emit_here(e) + 7 + 0x200);
    emit_mov_load_rip(e, R12, emit_here(e) + 7 - 0x10);
    emit_mov_store_rip(e, emit_here(e) + 7 + 0x300, RCX);
    emit_mov_store_rip(e, emit_here(e) + 7 - 0x20, R9);
    emit_mov_store_rip_imm(e, emit_here(e) + 11 + 0x400, 0);
    emit_mov_store_rip_imm(e, emit_here(e) + 11 - 0x30, -5);
    emit_call_reg(e, RAX);
    emit_call_reg(e, R11);
    emit_jmp_reg(e, RCX);
    emit_jmp_reg(e, R15);
    for (size_t i = 0; i < N_MEMS; i++)
        emit_jmp_mem(e, bases_and_disps[i]);
    emit_ret(e);
    emit_int3(e);
    emit_nop(e);
    emit_quad(e, 0x0123456789abcdefu);
}

/* One line per booked range: "WHAT start-end cfa=REG+OFFSET rbp=same|cfaOFFSET". */
static void print_frames(struct emitter *e, const char *what)
{
    size_t n = emit_frame_end(e);
    if (!n)
        printf("%s: error %d\n", what, (int)e->error);
    for (size_t i = 0; i < n; i++) {
        const struct emit_frame *f = &e->frames[i];
        printf("%s %u-%u cfa=%s%+d rbp=", what, f->start, f->end, f->cfa_reg == RBP ? "rbp" : "rsp", f->cfa_offset);
        if (f->rbp_saved)
            printf("cfa%+d\n", f->rbp_offset);
        else
            printf("same\n");
    }
}

int main(int argc, char **argv)
{
    static unsigned char code[65536];
    struct emitter e;
    if (argc == 3 && strcmp(argv[1], "code") == 0) {
        emit_init(&e, code, sizeof code, PC);
        emit_all(&e);
        FILE *f = fopen(argv[2], "wb");
        if (e.error || !f || fwrite(code, 1, e.len, f) != e.len || fclose(f) != 0)
            return 1;
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "errors") == 0) {
        unsigned char small[12];
        emit_init(&e, small, sizeof small, PC);
        emit_mov_imm64(&e, RAX, 1);   /* 10 bytes: fits */
        emit_mov_imm64(&e, RAX, 2);   /* does not */
        emit_ret(&e);                 /* nothing after an error */
        printf("no room: error %d, %zu bytes\n", (int)e.error, e.len);
        emit_init(&e, code, sizeof code, PC);
        emit_call(&e, PC + 5 + 0x7fffffffu);   /* the farthest reachable */
        emit_jmp(&e, emit_here(&e) + 5 + 0x80000000u);   /* one past */
        printf("out of reach: error %d, %zu bytes\n", (int)e.error, e.len);
        emit_init(&e, code, sizeof code, PC);
        emit_jmp_table(&e, 0x7ffffff8, RAX);   /* the highest table that fits */
        emit_jmp_table(&e, 0x80000000u, RAX);  /* above 2 GiB */
        printf("table out of reach: error %d, %zu bytes\n", (int)e.error, e.len);
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "label") == 0) {
        /* nop; jmp *slot(%rip); int3 to 8; slot: .quad (emit.test's as reference) */
        emit_init(&e, code, sizeof code, PC);
        emit_label slot = emit_new_label(&e);
        emit_nop(&e);
        emit_jmp_rip_label(&e, slot);
        emit_align(&e, 8);
        emit_bind(&e, slot);
        emit_quad(&e, 0x1122334455667788u);
        FILE *f = fopen(argv[2], "wb");
        if (emit_finish(&e) || !f || fwrite(code, 1, e.len, f) != e.len || fclose(f) != 0)
            return 1;
        emit_init(&e, code, sizeof code, PC);
        emit_jmp_rip_label(&e, emit_new_label(&e));   /* never bound */
        printf("unbound: error %d\n", (int)emit_finish(&e));
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "frames") == 0) {
        /* The interceptor's frame, then the store stub's, as the books see them. */
        emit_init(&e, code, sizeof code, PC);
        emit_frame_begin(&e, 8);
        emit_push(&e, RBP);
        emit_mov(&e, RBP, RSP);
        emit_and_imm(&e, RSP, -16);
        emit_sub_imm(&e, RSP, 200);
        emit_mov_imm64(&e, R11, 1);
        emit_call_reg(&e, R11);
        emit_mov(&e, RSP, RBP);
        emit_pop(&e, RBP);
        emit_jmp_reg(&e, R11);
        print_frames(&e, "entry");
        emit_frame_begin(&e, 0);
        emit_lea(&e, RSP, MEM(RSP, -128));
        emit_push(&e, RBP);
        emit_mov(&e, RBP, RSP);
        emit_pushfq(&e);
        emit_push(&e, RAX);
        emit_and_imm(&e, RSP, -16);
        emit_lea(&e, RSP, MEM(RBP, -16));
        emit_pop(&e, RAX);
        emit_popfq(&e);
        emit_pop(&e, RBP);
        emit_lea(&e, RSP, MEM(RSP, 128));
        emit_jmp(&e, PC);
        print_frames(&e, "store");
        /* What the books cannot follow: rsp aligned while the CFA is on it. */
        emit_init(&e, code, sizeof code, PC);
        emit_frame_begin(&e, 8);
        emit_and_imm(&e, RSP, -16);
        printf("lost: error %d, %zu ranges\n", (int)e.error, emit_frame_end(&e));
        /* ... and rbp popped from where the caller's was not saved. */
        emit_init(&e, code, sizeof code, PC);
        emit_frame_begin(&e, 8);
        emit_push(&e, RAX);
        emit_pop(&e, RBP);
        printf("clobbered: error %d\n", (int)e.error);
        return 0;
    }
    fprintf(stderr, "usage: emit-check code FILE | errors | label FILE | frames\n");
    return 2;
}
