/* The calls and tail jumps a function makes, and the GOT slot a PLT entry
 * jumps through, read from the running code of the architecture being
 * built: x86-64's by opcode bytes (x86_64/call_scan.c), AArch64's from its
 * fixed-width encodings (aarch64/a64_scan.c). For the allocation wrappers'
 * callees, asked of whole libraries at each start. */
#ifndef MEMPROF_ARCH_CODE_SCAN_H
#define MEMPROF_ARCH_CODE_SCAN_H
#include <stdint.h>

/* Nonzero from `visit` stops the scan and is returned. */
typedef int call_scan_visit_fn(void *ctx, uintptr_t pc, uintptr_t target);

/* Each call and tail jump in the readable code [start, end) (the caller
 * checks it is), with where it goes. */
int call_scan(uintptr_t start, uintptr_t end, call_scan_visit_fn *visit, void *ctx);

/* The GOT slot a PLT entry at `pc` (16 readable bytes) jumps through, in
 * *slot: 1; 0 when its first instructions are not an entry's jump through
 * a slot (not a PLT entry). */
int call_scan_plt_slot(uintptr_t pc, uintptr_t *slot);
#endif
