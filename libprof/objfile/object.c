#include "object.h"
#include <elf.h>
#include <stddef.h>
#include <string.h>
#include <sys/auxv.h>

struct snapshot_ctx {
    struct elf_object *out;
    size_t max, count;
};

/* dl_iterate_phdr holds the loader's lock while it calls us: copy what the
 * loader gives and parse later, so nothing here can wait on another lock. */
static int collect(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct snapshot_ctx *ctx = data;
    if (ctx->count < ctx->max)
        ctx->out[ctx->count] = (struct elf_object){
            .name = info->dlpi_name ? info->dlpi_name : "",
            .base = info->dlpi_addr,
            .phdr = info->dlpi_phdr,
            .phnum = info->dlpi_phnum,
        };
    ctx->count++;
    return 0;
}

/* glibc rewrites most d_ptr entries to run-time addresses when it loads an
 * object; other loaders (and read-only dynamic sections) leave file offsets. */
static uintptr_t dyn_address(const struct elf_object *obj, ElfW(Addr) ptr)
{
    return ptr >= obj->base ? (uintptr_t)ptr : obj->base + (uintptr_t)ptr;
}

static void parse_dynamic(struct elf_object *obj, const ElfW(Dyn) *dyn)
{
    for (; dyn->d_tag != DT_NULL; dyn++) {
        switch (dyn->d_tag) {
        case DT_SYMTAB:   obj->symtab = (const void *)dyn_address(obj, dyn->d_un.d_ptr); break;
        case DT_STRTAB:   obj->strtab = (const void *)dyn_address(obj, dyn->d_un.d_ptr); break;
        case DT_STRSZ:    obj->strsz = dyn->d_un.d_val; break;
        case DT_JMPREL:   obj->jmprel = (const void *)dyn_address(obj, dyn->d_un.d_ptr); break;
        case DT_PLTRELSZ: obj->jmprel_size = dyn->d_un.d_val; break;
        case DT_RELA:     obj->rela = (const void *)dyn_address(obj, dyn->d_un.d_ptr); break;
        case DT_RELASZ:   obj->rela_size = dyn->d_un.d_val; break;
        case DT_GNU_HASH: obj->gnu_hash = (const void *)dyn_address(obj, dyn->d_un.d_ptr); break;
        case DT_HASH:     obj->sysv_hash = (const void *)dyn_address(obj, dyn->d_un.d_ptr); break;
        default: break;
        }
    }
}

static void parse_object(struct elf_object *obj, bool first)
{
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    const ElfW(Dyn) *dynamic = NULL;
    for (ElfW(Half) i = 0; i < obj->phnum; i++) {
        const ElfW(Phdr) *ph = &obj->phdr[i];
        if (ph->p_type == PT_LOAD) {
            uintptr_t s = obj->base + ph->p_vaddr;
            if (s < lo)
                lo = s;
            if (s + ph->p_memsz > hi)
                hi = s + ph->p_memsz;
        } else if (ph->p_type == PT_DYNAMIC) {
            dynamic = (const ElfW(Dyn) *)(obj->base + ph->p_vaddr);
        }
    }
    obj->start = lo == UINTPTR_MAX ? 0 : lo;
    obj->end = hi;

    uintptr_t vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
    uintptr_t loader = (uintptr_t)getauxval(AT_BASE);
    if (vdso && obj->start <= vdso && vdso < obj->end)
        obj->kind = ELF_OBJECT_VDSO;
    else if (loader && obj->start <= loader && loader < obj->end)
        obj->kind = ELF_OBJECT_LOADER;
    else if (first && obj->name[0] == '\0')
        obj->kind = ELF_OBJECT_PROGRAM;
    else
        obj->kind = ELF_OBJECT_LIBRARY;

    /* The vdso's dynamic section is never relocated; memprof has no use for it. */
    if (dynamic && obj->kind != ELF_OBJECT_VDSO)
        parse_dynamic(obj, dynamic);
}

size_t elf_objects_snapshot(struct elf_object *out, size_t max)
{
    struct snapshot_ctx ctx = { .out = out, .max = max };
    dl_iterate_phdr(collect, &ctx);
    size_t n = ctx.count < max ? ctx.count : max;
    for (size_t i = 0; i < n; i++)
        parse_object(&out[i], i == 0);
    return ctx.count;
}

static int read_subs(struct dl_phdr_info *info, size_t size, void *data)
{
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
        *(unsigned long long *)data = info->dlpi_subs;
    return 1;   /* every object gives the same count: the first will do */
}

unsigned long long elf_objects_unloaded(void)
{
    unsigned long long subs = ~0ull;
    dl_iterate_phdr(read_subs, &subs);
    return subs;
}

const struct elf_object *elf_objects_find(const struct elf_object *objs, size_t n, uintptr_t addr)
{
    for (size_t i = 0; i < n; i++)
        if (objs[i].start <= addr && addr < objs[i].end)
            return &objs[i];
    return NULL;
}

const char *elf_object_symbol_name(const struct elf_object *obj, size_t sym)
{
    if (!obj->symtab || !obj->strtab)
        return NULL;
    size_t off = obj->symtab[sym].st_name;
    if (obj->strsz && off >= obj->strsz)
        return NULL;
    return obj->strtab + off;
}
