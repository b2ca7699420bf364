/* ELF files for binary.h, with libelf: every symbol of .symtab (else
 * .dynsym, else the separate debug file's .symtab), and the imports: each
 * dynamic relocation that names a symbol and fills a pointer (JUMP_SLOT,
 * GLOB_DAT, 64), the library from symbol versioning, and the PLT entry
 * that jumps through the slot, found by decoding .plt, .plt.sec and
 * .plt.got as they are (not by assuming their layout). */
#include "elf_binary.h"
#include "binary_build.h"
#include "debugfile.h"
#include "../arch/aarch64/plt.h"
#include "../arch/x86_64/decode.h"
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A version a symbol of .dynsym needs (its name and its library's), or
 * one this file defines (`file` NULL). */
struct needed_version {
    unsigned index;
    const char *name, *file;
};

/* A PLT entry: the slot its `jmp *slot(%rip)` goes through. */
struct plt_entry {
    uint64_t slot, stub;
    const char *section;
};

struct elf_reader {
    Elf *elf;
    struct binary *b;
    size_t shstrndx;
    Elf_Scn *dynsym;
    GElf_Shdr dynsym_shdr;
    Elf_Data *versym;                 /* .gnu.version: one per .dynsym entry */
    struct needed_version versions[256];
    unsigned version_count;
    bool bind_now;
    const struct reloc_kinds *kinds;  /* the machine's dynamic relocations */
    struct plt_entry *plt;            /* every PLT entry's slot, decoded once, by slot */
    size_t plt_count;
};

/* What each machine memprof reads calls the relocations of its imports. */
struct reloc_kinds {
    uint16_t machine;
    unsigned jump_slot, glob_dat, abs64;
};
static const struct reloc_kinds reloc_kinds[] = {
    { EM_X86_64, R_X86_64_JUMP_SLOT, R_X86_64_GLOB_DAT, R_X86_64_64 },
    { EM_AARCH64, R_AARCH64_JUMP_SLOT, R_AARCH64_GLOB_DAT, R_AARCH64_ABS64 },
};

static const struct reloc_kinds *kinds_of(uint16_t machine)
{
    for (size_t i = 0; i < sizeof reloc_kinds / sizeof *reloc_kinds; i++)
        if (reloc_kinds[i].machine == machine)
            return &reloc_kinds[i];
    return NULL;
}

static const char *section_at(struct elf_reader *r, uint64_t address)
{
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(r->elf, scn));) {
        GElf_Shdr shdr;
        if (gelf_getshdr(scn, &shdr) && (shdr.sh_flags & SHF_ALLOC) && address >= shdr.sh_addr &&
            address - shdr.sh_addr < shdr.sh_size) {
            const char *name = elf_strptr(r->elf, r->shstrndx, shdr.sh_name);
            return name ? name : "";
        }
    }
    return "";
}

/* .gnu.version_d: the versions the file defines (a library's own symbols,
 * which its relocations may name too). */
static void read_defined_versions(struct elf_reader *r, Elf_Scn *scn, const GElf_Shdr *shdr)
{
    Elf_Data *data = elf_getdata(scn, NULL);
    size_t at = 0;
    for (unsigned n = 0; data && n < shdr->sh_info; n++) {
        GElf_Verdef def;
        GElf_Verdaux aux;
        if (!gelf_getverdef(data, (int)at, &def))
            break;
        if (!(def.vd_flags & VER_FLG_BASE) && gelf_getverdaux(data, (int)(at + def.vd_aux), &aux) &&
            r->version_count < sizeof r->versions / sizeof *r->versions)
            r->versions[r->version_count++] = (struct needed_version){
                def.vd_ndx, elf_strptr(r->elf, shdr->sh_link, aux.vda_name), NULL };
        if (!def.vd_next)
            break;
        at += def.vd_next;
    }
}

/* .gnu.version_r: each version needed, with its library. */
static void read_versions(struct elf_reader *r)
{
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(r->elf, scn));) {
        GElf_Shdr shdr;
        if (!gelf_getshdr(scn, &shdr))
            continue;
        if (shdr.sh_type == SHT_GNU_versym)
            r->versym = elf_getdata(scn, NULL);
        if (shdr.sh_type == SHT_GNU_verdef)
            read_defined_versions(r, scn, &shdr);
        if (shdr.sh_type != SHT_GNU_verneed)
            continue;
        Elf_Data *data = elf_getdata(scn, NULL);
        size_t at = 0;
        for (unsigned n = 0; data && n < shdr.sh_info; n++) {
            GElf_Verneed need;
            if (!gelf_getverneed(data, (int)at, &need))
                break;
            const char *file = elf_strptr(r->elf, shdr.sh_link, need.vn_file);
            size_t aux_at = at + need.vn_aux;
            for (unsigned k = 0; k < need.vn_cnt; k++) {
                GElf_Vernaux aux;
                if (!gelf_getvernaux(data, (int)aux_at, &aux))
                    break;
                if (r->version_count < sizeof r->versions / sizeof *r->versions)
                    r->versions[r->version_count++] = (struct needed_version){
                        aux.vna_other, elf_strptr(r->elf, shdr.sh_link, aux.vna_name), file };
                if (!aux.vna_next)
                    break;
                aux_at += aux.vna_next;
            }
            if (!need.vn_next)
                break;
            at += need.vn_next;
        }
    }
}

/* The version and library .dynsym entry `index` needs, or NULL; whether
 * it is the default version of a symbol the file defines (name@@VERSION). */
static const struct needed_version *version_of(const struct elf_reader *r, size_t index, bool *is_default)
{
    GElf_Versym v;
    if (is_default)
        *is_default = false;
    if (!r->versym || !gelf_getversym(r->versym, (int)index, &v))
        return NULL;
    if (is_default)
        *is_default = !(v & 0x8000);
    for (unsigned i = 0; i < r->version_count; i++)
        if (r->versions[i].index == (v & 0x7fff))
            return &r->versions[i];
    return NULL;
}

static const struct needed_version *version_by_name(struct elf_reader *r, const char *name)
{
    Elf_Data *data = r->dynsym ? elf_getdata(r->dynsym, NULL) : NULL;
    size_t n = data && r->dynsym_shdr.sh_entsize ? r->dynsym_shdr.sh_size / r->dynsym_shdr.sh_entsize : 0;
    size_t len = strcspn(name, "@");
    for (size_t i = 1; i < n; i++) {
        GElf_Sym sym;
        const char *dyn = gelf_getsym(data, (int)i, &sym) ? elf_strptr(r->elf, r->dynsym_shdr.sh_link, sym.st_name)
                                                          : NULL;
        if (dyn && sym.st_shndx == SHN_UNDEF && strncmp(dyn, name, len) == 0 && !dyn[len])
            return version_of(r, i, NULL);
    }
    return NULL;
}

static bool read_symbol_table(struct elf_reader *r, Elf *elf, Elf_Scn *scn, const GElf_Shdr *shdr, char *err,
                              size_t errlen)
{
    Elf_Data *data = elf_getdata(scn, NULL);
    size_t n = data && shdr->sh_entsize ? shdr->sh_size / shdr->sh_entsize : 0;
    size_t shstrndx;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0)
        shstrndx = 0;
    for (size_t i = 1; i < n; i++) {
        GElf_Sym sym;
        if (!gelf_getsym(data, (int)i, &sym))
            continue;
        int type = GELF_ST_TYPE(sym.st_info), bind = GELF_ST_BIND(sym.st_info);
        const char *name = elf_strptr(elf, shdr->sh_link, sym.st_name);
        if (!name || !*name || type == STT_SECTION || type == STT_FILE)
            continue;
        struct binary_symbol s = { .name = name, .library = "", .section = "" };
        s.weak = bind == STB_WEAK;
        s.function = type == STT_FUNC || type == STT_GNU_IFUNC;
        if (sym.st_shndx == SHN_UNDEF) {
            s.bind = BINARY_UNDEFINED;
            const struct needed_version *v = shdr->sh_type == SHT_DYNSYM ? version_of(r, i, NULL)
                                                                          : version_by_name(r, name);
            if (v && v->file)
                s.library = v->file;
            s.function = false;
        } else {
            s.bind = bind == STB_LOCAL ? BINARY_LOCAL : BINARY_EXTERNAL;
            s.address = sym.st_value;
            s.size = sym.st_size;
            if (sym.st_shndx == SHN_ABS)
                s.section = "*ABS*";
            else if (sym.st_shndx == SHN_COMMON)
                s.section = "*COM*";
            else if (sym.st_shndx < SHN_LORESERVE) {
                Elf_Scn *in = elf_getscn(elf, sym.st_shndx);
                GElf_Shdr in_shdr;
                const char *sn = in && gelf_getshdr(in, &in_shdr) ? elf_strptr(elf, shstrndx, in_shdr.sh_name) : NULL;
                s.section = sn ? sn : "";
            }
        }
        if (!binary_add_symbol(r->b, &s)) {
            snprintf(err, errlen, "out of memory");
            return false;
        }
    }
    return true;
}

static int by_plt_slot(const void *a, const void *b)
{
    const struct plt_entry *x = a, *y = b;
    if (x->slot != y->slot)
        return x->slot < y->slot ? -1 : 1;
    return x->stub < y->stub ? -1 : x->stub > y->stub;
}

static bool add_plt_entry(struct elf_reader *r, size_t *cap, struct plt_entry entry)
{
    if (r->plt_count == *cap) {
        struct plt_entry *grown = realloc(r->plt, (*cap = *cap ? 2 * *cap : 256) * sizeof *grown);
        if (!grown)
            return false;
        r->plt = grown;
    }
    r->plt[r->plt_count++] = entry;
    return true;
}

/* Every PLT entry and the slot it jumps through, from each instruction of
 * .plt, .plt.sec and .plt.got decoded from its start. False, with why in
 * err, when out of memory or without the arm64 decoder. */
static bool index_plt(struct elf_reader *r, char *err, size_t errlen)
{
    size_t cap = 0;
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(r->elf, scn));) {
        GElf_Shdr shdr;
        const char *name;
        if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_PROGBITS || !(shdr.sh_flags & SHF_EXECINSTR) ||
            !(name = elf_strptr(r->elf, r->shstrndx, shdr.sh_name)) || strncmp(name, ".plt", 4) != 0)
            continue;
        Elf_Data *data = elf_getdata(scn, NULL);
        uint64_t entry = shdr.sh_entsize ? shdr.sh_entsize : 16;
        if (r->kinds->machine == EM_AARCH64) {
            if (!a64_plt_decoder(err, errlen))
                return false;
            /* Each entry starts with adrp and ldr of its slot; the first,
             * PLT0, loads the resolver's and names no import's. */
            for (size_t at = 0; data && at + 8 <= data->d_size; at += 4) {
                uint64_t slot;
                if (!a64_plt_slot((const uint8_t *)data->d_buf + at, data->d_size - at, shdr.sh_addr + at, &slot))
                    continue;
                if (!add_plt_entry(r, &cap, (struct plt_entry){ slot, shdr.sh_addr + at, name }))
                    goto out_of_memory;
                at += 12;   /* the rest of the entry: add, br */
            }
            continue;
        }
        for (size_t at = 0; data && at < data->d_size;) {
            struct insn insn;
            if (!decode_insn((const uint8_t *)data->d_buf + at, data->d_size - at, shdr.sh_addr + at, &insn)) {
                at++;   /* padding that is no instruction */
                continue;
            }
            if (insn.kind == INSN_JMP_INDIRECT && insn.rip_relative &&
                !add_plt_entry(r, &cap, (struct plt_entry){ insn.rip_address, shdr.sh_addr + at / entry * entry, name }))
                goto out_of_memory;
            at += insn.length;
        }
    }
    if (r->plt_count)
        qsort(r->plt, r->plt_count, sizeof *r->plt, by_plt_slot);
    return true;
out_of_memory:
    snprintf(err, errlen, "out of memory");
    return false;
}

/* The PLT entry that jumps through `slot` (the lowest, if several do). */
static void find_plt_entry(const struct elf_reader *r, uint64_t slot, struct binary_import *imp)
{
    size_t lo = 0, hi = r->plt_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->plt[mid].slot < slot)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < r->plt_count && r->plt[lo].slot == slot) {
        imp->stub = r->plt[lo].stub;
        imp->stub_section = r->plt[lo].section;
    }
}

static const char *keep(struct binary *b, const char *s)
{
    return s ? binary_keep(b, s, strlen(s)) : NULL;
}

static bool read_imports(struct elf_reader *r, char *err, size_t errlen)
{
    if (!index_plt(r, err, errlen))
        return false;
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(r->elf, scn));) {
        GElf_Shdr shdr;
        if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_RELA || !r->dynsym ||
            shdr.sh_link != elf_ndxscn(r->dynsym))
            continue;
        Elf_Data *data = elf_getdata(scn, NULL), *syms = elf_getdata(r->dynsym, NULL);
        size_t n = data && shdr.sh_entsize ? shdr.sh_size / shdr.sh_entsize : 0;
        for (size_t i = 0; i < n; i++) {
            GElf_Rela rela;
            GElf_Sym sym;
            if (!gelf_getrela(data, (int)i, &rela))
                continue;
            unsigned type = (unsigned)GELF_R_TYPE(rela.r_info);
            size_t index = GELF_R_SYM(rela.r_info);
            const struct reloc_kinds *k = r->kinds;
            const char *kind = type == k->jump_slot ? "JUMP_SLOT"
                               : type == k->glob_dat ? "GLOB_DAT"
                               : type == k->abs64    ? (k->machine == EM_AARCH64 ? "ABS64" : "64")
                                                     : NULL;
            if (!kind || index == 0 || !syms || !gelf_getsym(syms, (int)index, &sym))
                continue;
            const char *name = elf_strptr(r->elf, r->dynsym_shdr.sh_link, sym.st_name);
            bool is_default;
            const struct needed_version *v = version_of(r, index, &is_default);
            char version[160] = "";
            if (v && v->name)   /* "@V" after the name reads name@@V: the default version of its own symbol */
                snprintf(version, sizeof version, "%s%s", !v->file && is_default ? "@" : "", v->name);
            struct binary_import imp = { .symbol = name ? name : "", .slot = rela.r_offset, .slot_kind = kind,
                                         .slot_section = section_at(r, rela.r_offset), .stub_section = "",
                                         .library = v && v->file ? v->file : "", .version = version,
                                         .lazy = type == k->jump_slot && !r->bind_now };
            if (type != k->abs64)
                find_plt_entry(r, rela.r_offset, &imp);
            /* libelf's strings go with the file: the import keeps copies. */
            imp.symbol = keep(r->b, imp.symbol), imp.library = keep(r->b, imp.library);
            imp.version = keep(r->b, imp.version), imp.slot_section = keep(r->b, imp.slot_section);
            imp.stub_section = keep(r->b, imp.stub_section);
            if (!imp.symbol || !imp.library || !imp.version || !imp.slot_section || !imp.stub_section ||
                !binary_add_import(r->b, &imp)) {
                snprintf(err, errlen, "out of memory");
                return false;
            }
        }
    }
    return true;
}

static void read_dynamic_flags(struct elf_reader *r, bool *dynamic)
{
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(r->elf, scn));) {
        GElf_Shdr shdr;
        if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_DYNAMIC)
            continue;
        *dynamic = true;
        Elf_Data *data = elf_getdata(scn, NULL);
        size_t n = data && shdr.sh_entsize ? shdr.sh_size / shdr.sh_entsize : 0;
        for (size_t i = 0; i < n; i++) {
            GElf_Dyn dyn;
            if (!gelf_getdyn(data, (int)i, &dyn))
                continue;
            if ((dyn.d_tag == DT_FLAGS && (dyn.d_un.d_val & DF_BIND_NOW)) ||
                (dyn.d_tag == DT_FLAGS_1 && (dyn.d_un.d_val & DF_1_NOW)) || dyn.d_tag == DT_BIND_NOW)
                r->bind_now = true;
        }
    }
}

static const char *file_kind(Elf *elf, const GElf_Ehdr *ehdr)
{
    if (ehdr->e_type == ET_REL)
        return "relocatable object";
    if (ehdr->e_type == ET_EXEC)
        return "executable";
    if (ehdr->e_type == ET_CORE)
        return "core file";
    size_t n = 0;
    elf_getphdrnum(elf, &n);
    for (size_t i = 0; i < n; i++) {
        GElf_Phdr phdr;
        if (gelf_getphdr(elf, (int)i, &phdr) && phdr.p_type == PT_INTERP)
            return "position-independent executable";
    }
    return "shared object";
}

/* The symbol table to read: .symtab, else the debug file's, else .dynsym. */
static bool read_symbols(struct elf_reader *r, const char *path, char *err, size_t errlen, const char **from)
{
    Elf_Scn *symtab = NULL;
    GElf_Shdr symtab_shdr;
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(r->elf, scn));) {
        GElf_Shdr shdr;
        if (gelf_getshdr(scn, &shdr) && shdr.sh_type == SHT_SYMTAB)
            symtab = scn, symtab_shdr = shdr;
    }
    if (symtab) {
        *from = ".symtab";
        return read_symbol_table(r, r->elf, symtab, &symtab_shdr, err, errlen);
    }
    static char debug[4096];
    struct debugfile_search search;
    if (debugfile_find(path, debug, sizeof debug, &search)) {
        int fd = open(debug, O_RDONLY | O_CLOEXEC);
        Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
        bool read = false;
        for (Elf_Scn *scn = NULL; elf && (scn = elf_nextscn(elf, scn));) {
            GElf_Shdr shdr;
            if (gelf_getshdr(scn, &shdr) && shdr.sh_type == SHT_SYMTAB) {
                read = read_symbol_table(r, elf, scn, &shdr, err, errlen);
                break;
            }
        }
        /* The names were copied: the debug file can go. */
        if (elf)
            elf_end(elf);
        if (fd >= 0)
            close(fd);
        if (read) {
            *from = debug;
            return true;
        }
    }
    *from = r->dynsym ? ".dynsym" : "nowhere (no symbol table)";
    return !r->dynsym || read_symbol_table(r, r->elf, r->dynsym, &r->dynsym_shdr, err, errlen);
}

int elf_binary_read(struct binary *b, const char *path, int fd, char *err, size_t errlen)
{
    elf_version(EV_CURRENT);
    Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
    GElf_Ehdr ehdr;
    int error = elf_errno();
    if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &ehdr)) {
        error = error ? error : elf_errno();
        snprintf(err, errlen, "a damaged ELF file: %s", error ? elf_errmsg(error) : "too short for its header");
        if (elf)
            elf_end(elf);
        return -1;
    }
    /* libelf reads a file cut short as one without sections: say what it is. */
    struct stat st;
    size_t shnum = ehdr.e_shnum;   /* 0 with e_shoff set: the count is in section 0, read by libelf */
    if (!shnum && ehdr.e_shoff && elf_getshdrnum(elf, &shnum) != 0)
        shnum = 1;
    if (fstat(fd, &st) == 0 && shnum &&
        (ehdr.e_shoff > (uint64_t)st.st_size ||
         (uint64_t)shnum * ehdr.e_shentsize > (uint64_t)st.st_size - ehdr.e_shoff)) {
        snprintf(err, errlen, "a truncated ELF file: its %zu section headers (at %llu) end past its %lld bytes", shnum,
                 (unsigned long long)ehdr.e_shoff, (long long)st.st_size);
        elf_end(elf);
        return -1;
    }
    struct elf_reader *r = calloc(1, sizeof *r);
    if (!r) {
        elf_end(elf);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    r->elf = elf, r->b = b;
    if (elf_getshdrstrndx(elf, &r->shstrndx) != 0)
        r->shstrndx = 0;
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
        GElf_Shdr shdr;
        if (gelf_getshdr(scn, &shdr) && shdr.sh_type == SHT_DYNSYM)
            r->dynsym = scn, r->dynsym_shdr = shdr;
    }
    read_versions(r);
    bool dynamic = false;
    read_dynamic_flags(r, &dynamic);
    snprintf(b->format, sizeof b->format, "ELF %s %s %s", gelf_getclass(elf) == ELFCLASS64 ? "64-bit" : "32-bit",
             ehdr.e_machine == EM_X86_64 ? "x86-64" : ehdr.e_machine == EM_AARCH64 ? "AArch64" : "(another machine)",
             file_kind(elf, &ehdr));
    const char *from = "";
    int rc = read_symbols(r, path, err, errlen, &from) ? 0 : -1;
    if (rc == 0) {
        binary_sort_symbols(b);
        if (!(r->kinds = kinds_of(ehdr.e_machine))) {
            snprintf(b->imports_why, sizeof b->imports_why,
                     "memprof reads the imports of x86-64 and AArch64 ELF files, not %s", b->format + 4);
        } else if (ehdr.e_type == ET_REL) {
            snprintf(b->imports_why, sizeof b->imports_why,
                     "a relocatable object: what it imports is bound by the linker, not at run time");
        } else if (read_imports(r, err, errlen)) {
            binary_sort_imports(b);
            b->imports_read = true;
        } else {
            rc = -1;
        }
        const char *abs64 = ehdr.e_machine == EM_AARCH64 ? "ABS64" : "64";
        if (!dynamic)
            snprintf(b->sources, sizeof b->sources, "symbols from %.200s; no dynamic section: nothing is imported at "
                     "run time", from);
        else
            snprintf(b->sources, sizeof b->sources,
                     "symbols from %.200s; imports from the dynamic relocations (JUMP_SLOT, GLOB_DAT, %s%s), libraries "
                     "from symbol versions, stubs by decoding .plt*", from, abs64,
                     r->bind_now ? "; bound at load: BIND_NOW" : "");
    }
    free(r->plt);
    free(r);
    elf_end(elf);
    return rc;
}
