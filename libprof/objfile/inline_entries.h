/* Every copy of a function, out of line and inlined, with where one of its
 * parameters is at the copy's entry, from DWARF (libdwarf): what an entry
 * hook on inlined code needs (memprof-hook --inline, issue 23). The entry is
 * DW_AT_entry_pc, else DW_AT_low_pc, else the lowest address of its ranges;
 * the parameter's place is its DW_AT_location there (an expression, or the
 * entry of its location list that covers the entry), read when it is one of
 * the simple forms below and refused with a reason otherwise. Reads files
 * and calls malloc: not for hooks. */
#ifndef MEMPROF_OBJFILE_INLINE_ENTRIES_H
#define MEMPROF_OBJFILE_INLINE_ENTRIES_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum param_place {
    PARAM_REGISTER,     /* in general register `reg` (DWARF numbering: 0 rax, 1 rdx, 2 rcx, 3 rbx, 4 rsi,
                           5 rdi, 6 rbp, 7 rsp, 8-15 r8-r15) */
    PARAM_REGISTER_MEMORY,   /* in memory at register `reg` + `offset` (DW_OP_bregN) */
    PARAM_FRAME_MEMORY,      /* in memory at the frame base + `offset` (DW_OP_fbreg), the frame base being
                                `reg` + `frame_offset` when the function's DW_AT_frame_base says so, or the
                                CFA (DW_OP_call_frame_cfa: `frame_is_cfa`) */
    PARAM_CONSTANT,     /* the value `value` (DW_OP_litN, DW_OP_constN with DW_OP_stack_value) */
    PARAM_EXPRESSION,   /* computed by the DWARF expression `ops` from the registers (and memory) there:
                           its value when `is_value` (it ended with DW_OP_stack_value), else the address
                           of the value */
    PARAM_ENTRY_VALUE,  /* the value general register `reg` had at the entry of the function the copy is in,
                           `function_entry` (DW_OP_entry_value(DW_OP_regN), DW_OP_stack_value: GCC, for a
                           parameter passed on from that function's own argument) */
    PARAM_CFA,          /* the CFA itself (DW_OP_call_frame_cfa): what a frame base is, never a parameter */
    PARAM_UNREADABLE,   /* `why` says what the location is */
};

struct inline_entry {
    uint64_t entry;          /* a file address */
    bool inlined;            /* an inlined copy, else the function's own */
    /* Not 0: this is a further start of an inlined copy, the start of
     * another of its ranges; the copy's entry. `same_row`: it starts with
     * the line and column the entry starts with (clang's one DIE for the
     * copies of an unrolled loop, or code duplicated): entry_site.c hooks it
     * as a call of its own when its first instruction does what the entry's
     * does. The others are where a jump threaded into the copy may land,
     * hooked only when the caller's control flow says so. */
    uint64_t further_start_of;
    bool same_row;
    enum param_place place;
    unsigned reg;
    int64_t offset;
    bool frame_is_cfa;
    bool frame_is_rbp;       /* the frame base is %rbp itself (DW_OP_reg6: clang at -O0), valid past the prologue */
    /* Where the place read holds: its location list entry's [low, high), or 0
     * and UINT64_MAX for an expression (entry_site.c may move an inlined
     * copy's entry past alignment padding, within it). */
    uint64_t holds_low, holds_high;
    int64_t frame_offset;
    uint64_t value;
    uint64_t function_entry;   /* the entry of the function the copy is in (a file address) */
    /* PARAM_EXPRESSION: the operations (DW_OP_stack_value left off), each
     * of a kind inline_entries.c accepts, the stack never deeper than
     * INLINE_EXPRESSION_DEPTH nor popped when empty. */
#define INLINE_EXPRESSION_OPS 16
#define INLINE_EXPRESSION_DEPTH 8
    struct place_op {
        uint8_t atom;
        uint64_t operand, operand2;
    } ops[INLINE_EXPRESSION_OPS];
    unsigned op_count;
    bool is_value;
    /* A function's own copy with its parameter on the stack: the first
     * address past its prologue (the line table's second line, as GDB
     * finds it), where the slot holds the parameter; else 0 (a function
     * written on one line: entry_site.c then reads the prologue). */
    uint64_t body;
    char why[192];
    /* The code of the function the copy is in (itself, for its own copy):
     * a patch at the entry must check no branch there lands inside it. */
#define INLINE_FUNCTION_RANGES 4
    uint64_t function_start[INLINE_FUNCTION_RANGES], function_end[INLINE_FUNCTION_RANGES];
    unsigned function_ranges;   /* more than the array holds: the entry cannot be checked */
    /* An inlined copy's own code: a branch from outside it into it past
     * its entry would run it unseen (entry_site.c refuses the copy). */
#define INLINE_COPY_RANGES 8
    uint64_t copy_start[INLINE_COPY_RANGES], copy_end[INLINE_COPY_RANGES];
    unsigned copy_ranges;       /* more than the array holds: refused */
};

/* Called for each copy; non-zero stops. */
typedef int elf_inline_fn(void *ctx, const struct inline_entry *e);

/* 0 (also when nothing is found: no call; a copy without the parameter is
 * reported as unreadable, saying so), or -1 with `err` set (no DWARF). */
int elf_inline_entries(const char *path, const char *function, const char *parameter, elf_inline_fn *each,
                       void *ctx, char *err, size_t errlen);
#endif
