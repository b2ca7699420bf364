/* Loaded ELF objects as the dynamic linker mapped them: what memprof needs of
 * each one's dynamic section, read in place (no file access, no malloc). */
#ifndef MEMPROF_OBJFILE_OBJECT_H
#define MEMPROF_OBJFILE_OBJECT_H
#include <link.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum elf_object_kind {
    ELF_OBJECT_PROGRAM, /* the main executable */
    ELF_OBJECT_LIBRARY,
    ELF_OBJECT_LOADER,  /* ld.so: its GOT serves the loader itself, never hook it */
    ELF_OBJECT_VDSO,
};

struct elf_object {
    const char *name;          /* path as the loader knows it; "" for the program */
    uintptr_t base;            /* load bias: add to any address in the file */
    uintptr_t start, end;      /* span of its PT_LOAD segments */
    enum elf_object_kind kind;
    const ElfW(Phdr) *phdr;
    ElfW(Half) phnum;

    /* From PT_DYNAMIC; NULL/0 when absent. */
    const ElfW(Sym) *symtab;
    const char *strtab;
    size_t strsz;
    const ElfW(Rela) *jmprel;  /* DT_JMPREL: PLT relocations */
    size_t jmprel_size;
    const ElfW(Rela) *rela;    /* DT_RELA: the other relocations, GLOB_DAT among them */
    size_t rela_size;
    const uint32_t *gnu_hash;  /* DT_GNU_HASH */
    const ElfW(Word) *sysv_hash; /* DT_HASH */
};

/* Fill `out` with up to `max` objects currently loaded, in link-map order.
 * Returns how many are loaded (which may exceed max). */
size_t elf_objects_snapshot(struct elf_object *out, size_t max);

/* How many objects the loader has unloaded since the process started
 * (dl_iterate_phdr's dlpi_subs): while it stays the same, an object seen at
 * a load bias before is still that object. */
unsigned long long elf_objects_unloaded(void);

/* The object that contains `addr`, from a snapshot; NULL if none does. */
const struct elf_object *elf_objects_find(const struct elf_object *objs, size_t n, uintptr_t addr);

/* Name of the symbol at index `sym` of the object's dynamic symbol table. */
const char *elf_object_symbol_name(const struct elf_object *obj, size_t sym);

#endif
