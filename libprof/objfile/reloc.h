/* The GOT slots of a loaded object, found from its relocation entries
 * (r_offset), never by decoding PLT stubs: .plt.sec, IBT and -fno-plt code
 * all break stub decoding, while the relocations stay the same. */
#ifndef MEMPROF_OBJFILE_RELOC_H
#define MEMPROF_OBJFILE_RELOC_H
#include "object.h"

enum elf_slot_kind {
    ELF_SLOT_JUMP, /* R_X86_64_JUMP_SLOT: a PLT call's target */
    ELF_SLOT_DATA, /* R_X86_64_GLOB_DAT: an address load (-fno-plt calls, &func) */
};

/* Called for each JUMP_SLOT and GLOB_DAT slot; return non-zero to stop. */
typedef int (*elf_slot_fn)(const struct elf_object *obj, const char *symbol,
                           uintptr_t *slot, enum elf_slot_kind kind, void *ctx);

int elf_object_each_slot(const struct elf_object *obj, elf_slot_fn fn, void *ctx);
#endif
