/* Finding the calls and tail jumps a function makes without decoding it:
 * every byte that could open a `call rel32` or `jmp rel32` (E8, E9), and
 * where that instruction would go. A superset of what the decoder's walk
 * reports as INSN_CALL_REL32 and INSN_JMP_REL32: the caller narrows it (to
 * functions' first bytes, say), which leaves, rarely, a byte inside another
 * instruction whose next four happen to name such a place. For a question
 * asked of a whole library at each start (the allocation wrappers' callees),
 * where Zydis spends about 1,000 instructions on each instruction. */
#ifndef MEMPROF_ARCH_X86_64_CALL_SCAN_H
#define MEMPROF_ARCH_X86_64_CALL_SCAN_H
#include <stdint.h>

/* Nonzero from `visit` stops the scan and is returned. */
typedef int call_scan_visit_fn(void *ctx, uintptr_t pc, uintptr_t target);

/* The readable code [start, end) (the caller checks it is). */
int call_scan(uintptr_t start, uintptr_t end, call_scan_visit_fn *visit, void *ctx);

/* The GOT slot a PLT entry at `pc` (16 readable bytes) jumps through, in
 * *slot: 1; 0 when its first instructions read no slot (not a PLT entry);
 * -1 when they do not decode. */
int call_scan_plt_slot(uintptr_t pc, uintptr_t *slot);
#endif
