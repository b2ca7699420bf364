/* The calls a function makes, and the slot a PLT entry jumps through, in
 * the architecture being built's own code (x86_64/ or aarch64/). */
#ifndef MEMPROF_ARCH_CODE_SCAN_H
#define MEMPROF_ARCH_CODE_SCAN_H
#if defined(__x86_64__)
#include "x86_64/call_scan.h"
#elif defined(__aarch64__)
#include "aarch64/a64_scan.h"
#endif
#endif
