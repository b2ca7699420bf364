/* Finding the calls and tail jumps an AArch64 function makes: every BL and
 * B (imm26) of its 4-byte instructions, and where each goes. Fixed-width,
 * aligned instructions decode exactly: no byte is read as the wrong
 * instruction. No disassembler is loaded into the target for it (Capstone's
 * relocations alone cost a start 6 ms). The same interface as x86-64's. */
#ifndef MEMPROF_ARCH_AARCH64_A64_SCAN_H
#define MEMPROF_ARCH_AARCH64_A64_SCAN_H
#include <stdint.h>

/* Nonzero from `visit` stops the scan and is returned. */
typedef int call_scan_visit_fn(void *ctx, uintptr_t pc, uintptr_t target);

/* The readable code [start, end) (the caller checks it is). */
int call_scan(uintptr_t start, uintptr_t end, call_scan_visit_fn *visit, void *ctx);

/* The GOT slot a PLT entry at `pc` (16 readable bytes) jumps through, in
 * *slot: 1 (ADRP and LDR, after a BTI); 0 when it reads none. */
int call_scan_plt_slot(uintptr_t pc, uintptr_t *slot);
#endif
