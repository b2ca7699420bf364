/* A small x86-64 code emitter with the assembler's names: trampolines and
 * stubs are written as sequences of instructions, never as byte templates.
 *
 * Code is written into `buf` (a writable mapping) for execution at `pc`
 * (where it will run: the same page or another view of it, W^X), so that
 * rel32 and rip-relative operands are computed for where the code runs.
 * Every emitter call checks room; the first failure (no room, a target out
 * of rel32 reach) sticks in `error` and later calls do nothing. */
#ifndef MEMPROF_ARCH_X86_64_EMIT_H
#define MEMPROF_ARCH_X86_64_EMIT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum reg {
    RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI,
    R8, R9, R10, R11, R12, R13, R14, R15,
};
enum xmm { XMM0, XMM1, XMM2, XMM3, XMM4, XMM5, XMM6, XMM7,
           XMM8, XMM9, XMM10, XMM11, XMM12, XMM13, XMM14, XMM15 };

/* A memory operand: [base + disp]. */
struct mem { enum reg base; int32_t disp; };
#define MEM(base, disp) ((struct mem){ (base), (disp) })

enum emit_error {
    EMIT_OK = 0,
    EMIT_NO_ROOM,
    EMIT_OUT_OF_REACH,
    EMIT_FRAME_UNKNOWN,   /* an instruction left the frame books unable to say where the CFA is */
    EMIT_BAD_LABEL,       /* a label used but never bound, or too many */
};

/* The frame books (emit_frame_begin): from `start` to `end` (offsets from
 * the stub's first byte), the canonical frame address is `cfa_reg` +
 * `cfa_offset`, and the caller's rbp is in rbp (rbp_saved false) or at
 * CFA + rbp_offset. Each instruction that changes one starts a range. */
struct emit_frame {
    uint32_t start, end;
    enum reg cfa_reg;         /* RSP or RBP */
    int32_t cfa_offset;
    bool rbp_saved;
    int32_t rbp_offset;
};
#define EMIT_MAX_FRAMES 16
#define EMIT_MAX_LABELS 4

struct emitter {
    uint8_t *buf;
    size_t cap, len;
    uintptr_t pc;            /* where buf[0] runs */
    enum emit_error error;
    /* Frame books: kept from emit_frame_begin on. */
    bool books;
    size_t frame_base;               /* the stub's first byte (an offset into buf) */
    struct emit_frame frames[EMIT_MAX_FRAMES];
    size_t frame_count;
    bool rsp_known;                  /* with the CFA on rbp: rsp = rbp + rsp_from_rbp */
    int32_t rsp_from_rbp;
    /* Labels: bound to a run address; rel32 uses patched by emit_finish. */
    uintptr_t label_at[EMIT_MAX_LABELS];
    size_t label_count;
    struct { size_t field; uintptr_t end; unsigned label; } label_use[EMIT_MAX_LABELS];
    size_t label_uses;
};

void emit_init(struct emitter *e, void *buf, size_t cap, uintptr_t pc);
/* Where the next instruction runs. */
static inline uintptr_t emit_here(const struct emitter *e) { return e->pc + e->len; }
/* Resolve every label use; the emitter's error (EMIT_OK when the code is
 * whole). Call once the code is written. */
enum emit_error emit_finish(struct emitter *e);

/* A stub starts here: the CFA is rsp + `cfa_offset` (8 at a function's
 * entry, 0 where no return address was pushed) and rbp is the caller's.
 * From now on every instruction that moves rsp or rbp is booked. */
void emit_frame_begin(struct emitter *e, int32_t cfa_offset);
/* The stub's ranges, the last one ending here: their number (0 after an
 * error). */
size_t emit_frame_end(struct emitter *e);

/* Labels: a place in the code named before it is known (frida's put_label). */
typedef unsigned emit_label;
emit_label emit_new_label(struct emitter *e);
void emit_bind(struct emitter *e, emit_label label);        /* the label is here */
void emit_align(struct emitter *e, size_t alignment);       /* int3 up to a run address multiple */
void emit_jmp_rip_label(struct emitter *e, emit_label slot); /* jmp *slot(%rip) */

void emit_push(struct emitter *e, enum reg r);
void emit_pop(struct emitter *e, enum reg r);
void emit_push_imm(struct emitter *e, int32_t imm);                /* pushq $imm (sign-extended) */
void emit_pushfq(struct emitter *e);
void emit_popfq(struct emitter *e);
/* The arithmetic flags without pushfq/popfq (which would also carry a
 * debugger's trap flag from one instruction to a later one): lahf; seto %al
 * keeps them in ax, add $0x7f, %al; sahf puts them back. */
void emit_lahf(struct emitter *e);
void emit_sahf(struct emitter *e);
void emit_seto_al(struct emitter *e);
void emit_add_al_imm(struct emitter *e, int8_t imm);
void emit_mov_imm64(struct emitter *e, enum reg dst, uint64_t imm);     /* movabs $imm, %dst */
void emit_mov(struct emitter *e, enum reg dst, enum reg src);           /* mov %src, %dst */
void emit_mov_store(struct emitter *e, struct mem dst, enum reg src);   /* mov %src, disp(%base) */
void emit_mov_load(struct emitter *e, enum reg dst, struct mem src);    /* mov disp(%base), %dst */
void emit_mov_load_rip(struct emitter *e, enum reg dst, uintptr_t addr); /* mov addr(%rip), %dst */
void emit_mov_store_rip(struct emitter *e, uintptr_t addr, enum reg src); /* mov %src, addr(%rip) */
void emit_mov_store_rip_imm(struct emitter *e, uintptr_t addr, int32_t imm); /* movq $imm, addr(%rip) */
void emit_lea(struct emitter *e, enum reg dst, struct mem src);
void emit_add_imm(struct emitter *e, enum reg dst, int32_t imm);
void emit_sub_imm(struct emitter *e, enum reg dst, int32_t imm);
void emit_and_imm(struct emitter *e, enum reg dst, int32_t imm);
/* Two registers (op %src, %dst): %dst = %dst op %src. */
void emit_add(struct emitter *e, enum reg dst, enum reg src);
void emit_sub(struct emitter *e, enum reg dst, enum reg src);
void emit_and(struct emitter *e, enum reg dst, enum reg src);
void emit_or(struct emitter *e, enum reg dst, enum reg src);
void emit_xor(struct emitter *e, enum reg dst, enum reg src);
void emit_imul(struct emitter *e, enum reg dst, enum reg src);
/* A static thread-local variable `disp` bytes from the thread pointer:
 * op %src, %fs:disp. */
void emit_sub_fs(struct emitter *e, int32_t disp, enum reg src);
void emit_add_fs(struct emitter *e, int32_t disp, enum reg src);
/* shr $imm, %dst in 32 bits (the upper half of %dst zeroed). */
void emit_shr32_imm(struct emitter *e, enum reg dst, uint8_t imm);
/* A table at a 32-bit address (below 2 GiB) indexed by a register (not
 * rsp); a table higher up is EMIT_OUT_OF_REACH. */
void emit_movzbl_load_table(struct emitter *e, enum reg dst, uintptr_t table, enum reg index); /* movzbl table(,%index,1), %dst */
void emit_jmp_table(struct emitter *e, uintptr_t table, enum reg index);                      /* jmp *table(,%index,8) */
/* Shifts of %dst by %cl (shl, shr: logical, sar: arithmetic); neg and not. */
void emit_shl_cl(struct emitter *e, enum reg dst);
void emit_shr_cl(struct emitter *e, enum reg dst);
void emit_sar_cl(struct emitter *e, enum reg dst);
void emit_neg(struct emitter *e, enum reg dst);
void emit_not(struct emitter *e, enum reg dst);
void emit_movdqu_store(struct emitter *e, struct mem dst, enum xmm src);
void emit_movdqu_load(struct emitter *e, enum xmm dst, struct mem src);
void emit_call(struct emitter *e, uintptr_t target);      /* call rel32 */
void emit_jmp(struct emitter *e, uintptr_t target);       /* jmp rel32 */
/* jcc rel32, `condition` the low four bits of its opcode (0 jo ... 15 jg). */
void emit_jcc(struct emitter *e, unsigned condition, uintptr_t target);
/* An instruction moved from elsewhere (arch/x86_64/relocate.c): its `length`
 * bytes as they were, except, with `rip_field` >= 0, the disp32 at that
 * offset, re-aimed so that [rip + disp32] names `rip_address` from here. */
void emit_moved(struct emitter *e, const uint8_t *insn, size_t length, int rip_field, uintptr_t rip_address);
void emit_call_reg(struct emitter *e, enum reg r);        /* call *%r */
void emit_jmp_reg(struct emitter *e, enum reg r);         /* jmp *%r */
void emit_jmp_mem(struct emitter *e, struct mem m);       /* jmp *disp(%base) */
void emit_jmp_rip(struct emitter *e, uintptr_t slot);     /* jmp *slot(%rip) */
void emit_call_rip(struct emitter *e, uintptr_t slot);    /* call *slot(%rip) */
void emit_ret(struct emitter *e);
void emit_int3(struct emitter *e);
void emit_nop(struct emitter *e);
/* A 64-bit data word (a slot for jmp *slot(%rip)); returns where it runs. */
uintptr_t emit_quad(struct emitter *e, uint64_t value);
/* Can a rel32 at `from` (the end of its instruction) reach `to`? */
bool emit_rel32_reaches(uintptr_t from, uintptr_t to);
#endif
