#include "reloc.h"
#include "../arch/cpu.h"
#include <elf.h>

static int visit(const struct elf_object *obj, const ElfW(Rela) *rel, size_t count,
                 elf_slot_fn fn, void *ctx)
{
    for (size_t i = 0; i < count; i++) {
        unsigned type = (unsigned)ELF64_R_TYPE(rel[i].r_info);
        if (type != CPU_RELOC_JUMP_SLOT && type != CPU_RELOC_GLOB_DAT)
            continue;
        size_t sym = ELF64_R_SYM(rel[i].r_info);
        const char *name = sym ? elf_object_symbol_name(obj, sym) : NULL;
        if (!name || !*name)
            continue;
        enum elf_slot_kind kind = type == CPU_RELOC_JUMP_SLOT ? ELF_SLOT_JUMP : ELF_SLOT_DATA;
        int stop = fn(obj, name, (uintptr_t *)(obj->base + rel[i].r_offset), kind, ctx);
        if (stop)
            return stop;
    }
    return 0;
}

int elf_object_each_slot(const struct elf_object *obj, elf_slot_fn fn, void *ctx)
{
    if (!obj->symtab || !obj->strtab)
        return 0;
    size_t nplt = obj->jmprel ? obj->jmprel_size / sizeof(ElfW(Rela)) : 0;
    size_t nrela = obj->rela ? obj->rela_size / sizeof(ElfW(Rela)) : 0;
    int stop = visit(obj, obj->jmprel, nplt, fn, ctx);
    if (stop)
        return stop;
    /* Some linkers let DT_RELASZ cover .rela.plt too: visit each entry once. */
    const ElfW(Rela) *plt_lo = obj->jmprel, *plt_hi = obj->jmprel + nplt;
    const ElfW(Rela) *r = obj->rela, *end = obj->rela + nrela;
    if (nplt && plt_lo >= r && plt_hi <= end) {
        stop = visit(obj, r, (size_t)(plt_lo - r), fn, ctx);
        if (!stop)
            stop = visit(obj, plt_hi, (size_t)(end - plt_hi), fn, ctx);
        return stop;
    }
    return visit(obj, r, nrela, fn, ctx);
}
