/* Symbol lookup in a loaded object's .dynsym through its hash table
 * (DT_GNU_HASH, else DT_HASH), as the dynamic linker does it. */
#ifndef MEMPROF_OBJFILE_HASH_H
#define MEMPROF_OBJFILE_HASH_H
#include "object.h"

/* The object's own definition of `name` (undefined entries are skipped), or NULL. */
const ElfW(Sym) *elf_object_lookup(const struct elf_object *obj, const char *name);
/* Its run-time address, or 0. */
uintptr_t elf_object_symbol_address(const struct elf_object *obj, const char *name);
/* How many entries its .dynsym has (from the hash table: ELF records no
 * count in the dynamic section). */
size_t elf_object_symbol_count(const struct elf_object *obj);
#endif
