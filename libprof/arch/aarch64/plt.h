/* Reading an AArch64 program's PLT, on any host, with Capstone (Debian's
 * libcapstone-dev): the GOT slot each entry jumps through. What `memprof
 * imports` needs to name an arm64 program's stubs, as objdump does. */
#ifndef MEMPROF_ARCH_AARCH64_PLT_H
#define MEMPROF_ARCH_AARCH64_PLT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The code at `code` (`size` bytes, at `address`) starts a PLT entry
 * (`adrp x16, PAGE; ldr x17, [x16, #OFFSET]`, then `add` and `br x17`): the
 * slot it loads, PAGE + OFFSET, into *slot. */
bool a64_plt_slot(const uint8_t *code, size_t size, uint64_t address, uint64_t *slot);
#endif
