/* Reading an AArch64 program's PLT, on any host, with Capstone (Debian's
 * libcapstone4, loaded when first needed): the GOT slot each entry jumps through. What `memprof
 * imports` needs to name an arm64 program's stubs, as objdump does. */
#ifndef MEMPROF_ARCH_AARCH64_PLT_H
#define MEMPROF_ARCH_AARCH64_PLT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Capstone loaded (once, on first use); false with why in err if it cannot be. */
bool a64_plt_decoder(char *err, size_t errlen);

/* The code at `code` (`size` bytes, at `address`) starts a PLT entry
 * (`adrp x16, PAGE; ldr x17, [x16, #OFFSET]`, then `add` and `br x17`): the
 * slot it loads, PAGE + OFFSET, into *slot. */
bool a64_plt_slot(const uint8_t *code, size_t size, uint64_t address, uint64_t *slot);
#endif
