/* Reading existing x86-64 code, with Zydis (Debian's libzydis-dev): the
 * length of each instruction and what patching needs to know about it: a
 * relative call or jump and its target, a rip-relative memory operand and
 * the address it names, and where in the instruction that 32-bit field is.
 * Zydis decodes without allocating, so this is safe inside the target. */
#ifndef MEMPROF_ARCH_X86_64_DECODE_H
#define MEMPROF_ARCH_X86_64_DECODE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum insn_kind {
    INSN_OTHER = 0,
    INSN_CALL_REL32,      /* call rel32 (E8) */
    INSN_JMP_REL32,       /* jmp rel32 (E9) */
    INSN_BRANCH_REL,      /* another relative branch (jcc, jmp rel8, loop...) */
    INSN_CALL_INDIRECT,   /* call *operand: where it goes is not in the code */
    INSN_JMP_INDIRECT,    /* jmp *operand */
    INSN_RET,
};

struct insn {
    uint8_t length;
    enum insn_kind kind;
    uintptr_t target;          /* for relative branches */
    /* INSN_BRANCH_REL: a jcc (any width) and its condition (the opcode's low
     * four bits), or a jmp rel8; otherwise (loop, jrcxz, xbegin) neither. */
    bool is_jcc, is_jmp8;
    uint8_t condition;
    bool rip_relative;         /* has a [rip + disp32] memory operand */
    uintptr_t rip_address;     /* the address it names */
    uint8_t field_offset;      /* where the rel32 or disp32 sits, from the start */
    uint8_t rip_field_offset;  /* where the disp32 of a rip-relative operand sits */
    /* A store to [rip + disp32] of a general register (`mov %reg, VAR(%rip)`)
     * or of an immediate (`movq $imm32, VAR(%rip)`): what a compiler emits to
     * set a static variable. The register (0-15, rax to r15) or the
     * immediate (sign-extended), and the store's width in bytes (4 or 8). */
    bool stores_register, stores_immediate;
    uint8_t store_register, store_width;
    int64_t store_immediate;
};

/* A 64-bit load of a general register from memory, `mov disp(%base),
 * %dest`: register ids 0-15 (rax to r15), or INSN_BASE_RIP for [rip + disp32],
 * whose `address` is then the one it names; else `address` is disp. */
#define INSN_BASE_RIP 16
struct insn_load {
    uint8_t length, dest, base;
    uintptr_t address;
};
/* Decode the instruction at `code` (at most `avail` bytes readable, running
 * at `pc`) as such a load: false if it is anything else (another width, an
 * index register, a segment override, not a mov). A full decode: for a few
 * instructions, not for walking code. */
bool decode_load(const void *code, size_t avail, uintptr_t pc, struct insn_load *out);

/* What an instruction of an unoptimized function's prologue does (GDB's
 * amd64_analyze_prologue reads the same code): endbr64; push of a general
 * register; mov %rsp,%rbp; sub $imm,%rsp; or a spill: a mov of a general or
 * vector register to [%rbp + disp] (an argument to its stack slot). */
enum frame_setup {
    FRAME_OTHER, FRAME_ENDBR, FRAME_PUSH, FRAME_RBP_FROM_RSP, FRAME_RSP_LOWERED, FRAME_SPILL,
};
enum frame_setup decode_frame_setup(const void *code, size_t avail, uint8_t *length);
/* A nop of any length (alignment padding): its length, else 0. */
uint8_t decode_nop(const void *code, size_t avail);

/* The instructions at `a` and `b` (running at pc_a and pc_b, `avail`
 * bytes readable at each) do the same with, perhaps, other registers: the
 * same mnemonic and operand widths, the same displacements, scales and
 * immediates, the same address where rip-relative; not branches. What two
 * copies of one statement start with. */
bool decode_same_operation(const void *a, uintptr_t pc_a, const void *b, uintptr_t pc_b, size_t avail);

/* The instruction at `code` writes memory through an operand it names (not
 * a push's stack), or calls: what a compiler does not hoist. True also when
 * it does not decode. */
bool decode_has_effect(const void *code, size_t avail);

/* A piece of code in memory: a function, or a copy of one inlined into
 * another. */
struct code_range {
    uintptr_t start;
    size_t size;
};

/* Decode every instruction of each range from its start and call
 * visit(ctx, pc, insn), until a visit returns non-zero. A range not
 * readable with `margin` bytes on each side is skipped (a symbol that is
 * not mapped code); one whose bytes stop decoding is read up to there. 0, a
 * visit's non-zero, or an errno from reading the memory map. Not for hooks:
 * it reads /proc/self/maps. */
typedef int decode_visit_fn(void *ctx, uintptr_t pc, const struct insn *insn);
int decode_ranges(const struct code_range *ranges, size_t n, size_t margin, decode_visit_fn *visit, void *ctx);
/* The same with a memory map the caller read (one read for many calls). */
struct maps;
int decode_ranges_in(const struct maps *maps, const struct code_range *ranges, size_t n, size_t margin,
                     decode_visit_fn *visit, void *ctx);

/* Decode the instruction at `code` (at most `avail` bytes readable), which
 * runs at `pc`. False if the bytes are not a valid instruction. */
bool decode_insn(const void *code, size_t avail, uintptr_t pc, struct insn *out);
#endif
