/* How to step out of a frame, from the call frame information the compiler
 * left in every object (.eh_frame, found through .eh_frame_hdr with glibc's
 * _dl_find_object): the few rules code on x86-64 needs, read in place, no
 * malloc, no lock, callable from a hook or a signal handler.
 *
 * Only what this exact subset can say is answered: a canonical frame address
 * (CFA) of the stack or the frame pointer (%rsp or %rbp; sp or x29) plus an
 * offset, the return address saved below the CFA (at CFA-8 on x86-64), the
 * frame pointer kept or saved at CFA+offset. Anything else (a DWARF expression, a signal
 * frame, a register rule this subset does not follow) is "cannot say", and
 * the caller asks libunwind instead. */
#ifndef MEMPROF_UNWIND_CFI_H
#define MEMPROF_UNWIND_CFI_H
#include <stdbool.h>
#include <stdint.h>

enum cfi_base { CFI_UNKNOWN = 0, CFI_RSP, CFI_RBP };

/* 8 bytes: the unwinder's cache holds thousands. */
struct cfi_rule {
    int cfa_offset : 28;    /* CFA = base register + cfa_offset (0 to 128 MiB) */
    unsigned cfa_base : 2;  /* enum cfi_base; CFI_UNKNOWN: cannot say */
    unsigned outermost : 1; /* the return address is undefined: no caller */
    int16_t rbp_offset;     /* %rbp saved at CFA + rbp_offset; 0: unchanged */
    int16_t ra_offset;      /* the return address saved at CFA + ra_offset (< 0) */
};

/* The rule at `pc`: for a return address, pass it minus one (the call, not
 * what follows it, which may be another function). false: cannot say. */
bool cfi_rule_at(uintptr_t pc, struct cfi_rule *rule);
/* The extent [*start, *end) of the function whose FDE covers `pc`. false:
 * no FDE covers it. */
bool cfi_function_at(uintptr_t pc, uintptr_t *start, uintptr_t *end);
#endif
