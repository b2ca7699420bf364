/* Mach-O files (see macho.h). Every number read from the file is checked
 * before it is used as an offset, a count or an index: a damaged file is a
 * one-line error, never a read outside it. The names of Apple's headers
 * (<mach-o/loader.h>, nlist.h, fat.h) are kept for the fields and
 * constants, which this machine has no header for. */
#include "macho.h"
#include "binary_build.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MH_MAGIC_64 0xfeedfacfu
#define MH_CIGAM_64 0xcffaedfeu
#define MH_MAGIC 0xfeedfaceu
#define MH_CIGAM 0xcefaedfeu
#define FAT_MAGIC 0xcafebabeu      /* big-endian in the file */
#define FAT_MAGIC_64 0xcafebabfu
#define FAT_MAX_ARCHS 64           /* more is not a universal file (a Java class starts cafebabe too) */

#define MH_OBJECT 1
#define MH_EXECUTE 2
#define MH_DYLIB 6
#define MH_BUNDLE 8
#define MH_DSYM 0xa
#define MH_TWOLEVEL 0x80

#define LC_REQ_DYLD 0x80000000u
#define LC_SYMTAB 0x2
#define LC_DYSYMTAB 0xb
#define LC_LOAD_DYLIB 0xc
#define LC_SEGMENT_64 0x19
#define LC_LAZY_LOAD_DYLIB 0x20
#define LC_DYLD_INFO 0x22
#define LC_DYLD_INFO_ONLY (0x22 | LC_REQ_DYLD)
#define LC_LOAD_WEAK_DYLIB (0x18 | LC_REQ_DYLD)
#define LC_REEXPORT_DYLIB (0x1f | LC_REQ_DYLD)
#define LC_LOAD_UPWARD_DYLIB (0x23 | LC_REQ_DYLD)
#define LC_DYLD_CHAINED_FIXUPS (0x34 | LC_REQ_DYLD)

#define N_STAB 0xe0
#define N_TYPE 0x0e
#define N_EXT 0x01
#define N_UNDF 0x0
#define N_ABS 0x2
#define N_SECT 0xe
#define N_WEAK_REF 0x40
#define N_WEAK_DEF 0x80
#define SELF_LIBRARY_ORDINAL 0x0
#define DYNAMIC_LOOKUP_ORDINAL 0xfe
#define EXECUTABLE_ORDINAL 0xff

#define SECTION_TYPE 0xff
#define S_NON_LAZY_SYMBOL_POINTERS 0x6
#define S_LAZY_SYMBOL_POINTERS 0x7
#define S_SYMBOL_STUBS 0x8
#define S_LAZY_DYLIB_SYMBOL_POINTERS 0x10
#define S_ATTR_PURE_INSTRUCTIONS 0x80000000u
#define S_ATTR_SOME_INSTRUCTIONS 0x400u
#define INDIRECT_SYMBOL_LOCAL 0x80000000u
#define INDIRECT_SYMBOL_ABS 0x40000000u

#define BIND_OPCODE_MASK 0xf0
#define BIND_IMMEDIATE_MASK 0x0f
#define BIND_OPCODE_DONE 0x00
#define BIND_OPCODE_SET_DYLIB_ORDINAL_IMM 0x10
#define BIND_OPCODE_SET_DYLIB_ORDINAL_ULEB 0x20
#define BIND_OPCODE_SET_DYLIB_SPECIAL_IMM 0x30
#define BIND_OPCODE_SET_SYMBOL_TRAILING_FLAGS_IMM 0x40
#define BIND_OPCODE_SET_TYPE_IMM 0x50
#define BIND_OPCODE_SET_ADDEND_SLEB 0x60
#define BIND_OPCODE_SET_SEGMENT_AND_OFFSET_ULEB 0x70
#define BIND_OPCODE_ADD_ADDR_ULEB 0x80
#define BIND_OPCODE_DO_BIND 0x90
#define BIND_OPCODE_DO_BIND_ADD_ADDR_ULEB 0xa0
#define BIND_OPCODE_DO_BIND_ADD_ADDR_IMM_SCALED 0xb0
#define BIND_OPCODE_DO_BIND_ULEB_TIMES_SKIPPING_ULEB 0xc0
#define BIND_OPCODE_THREADED 0xd0
#define BINDS_MAX 1000000          /* a stream that binds more is refused, not run */

#define MAX_SEGMENTS 64
#define MAX_SECTIONS 255           /* n_sect is one byte, counted from 1 */
#define MAX_DYLIBS 253             /* ordinals 1-253; 254 and 255 are special */

struct section {
    char segment[17], name[17];
    const char *both;      /* "__TEXT,__stubs", kept in the binary */
    uint64_t addr, size;
    uint32_t flags, reserved1, reserved2;
};

struct segment {
    uint64_t vmaddr, vmsize;
};

/* A stub and the symbol it jumps to (the indirect symbol table's), by name. */
struct stub {
    const char *name;
    uint64_t address;
    const char *section;
};

struct macho {
    struct binary *b;      /* what is read goes there; names the imports use are kept in it */
    const uint8_t *p;      /* the slice */
    size_t size;
    uint32_t cputype, filetype, flags;
    struct segment segments[MAX_SEGMENTS];
    unsigned segment_count;
    struct section sections[MAX_SECTIONS];
    unsigned section_count;
    const char *dylibs[MAX_DYLIBS];   /* kept in the binary */
    unsigned dylib_count;
    bool has_symtab, has_dysymtab, has_dyld_info, chained;
    uint32_t symoff, nsyms, stroff, strsize;
    uint32_t ilocalsym, nlocalsym, iextdefsym, nextdefsym, iundefsym, nundefsym, indirectsymoff, nindirectsyms;
    uint32_t bind_off, bind_size, weak_bind_off, weak_bind_size, lazy_bind_off, lazy_bind_size;
    uint32_t dyld_info_cmd;
    struct stub *stubs;     /* sorted by name */
    size_t stub_count;
    char *err;
    size_t errlen;
};

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
    return le32(p) | (uint64_t)le32(p + 4) << 32;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[3] | (uint32_t)p[2] << 8 | (uint32_t)p[1] << 16 | (uint32_t)p[0] << 24;
}

static uint64_t be64(const uint8_t *p)
{
    return (uint64_t)be32(p) << 32 | be32(p + 4);
}

/* [off, off + len) inside a thing of `size` bytes, without overflow. */
static bool inside(uint64_t size, uint64_t off, uint64_t len)
{
    return off <= size && len <= size - off;
}

static int fail(struct macho *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct macho *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->err, m->errlen, fmt, ap);
    va_end(ap);
    /* Names from the file go into the message: it stays one line. */
    for (char *c = m->err; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
    return -1;
}

/* A fixed-size name field (segname, sectname: 16 bytes, NUL-padded or not). */
static void name16(char out[17], const uint8_t *field)
{
    memcpy(out, field, 16);
    out[16] = '\0';
}

static const struct {
    uint32_t cputype;
    const char *name;
} cpus[] = {
    { 0x01000007, "x86_64" }, { 0x0100000c, "arm64" }, { 0x0200000c, "arm64_32" }, { 7, "i386" },
    { 12, "arm" },            { 0x01000012, "ppc64" }, { 18, "ppc" },
};

static const char *cpu_name(uint32_t cputype)
{
    for (size_t i = 0; i < sizeof cpus / sizeof *cpus; i++)
        if (cpus[i].cputype == cputype)
            return cpus[i].name;
    return NULL;
}

bool macho_is(const uint8_t *bytes, size_t size)
{
    if (size < 8)
        return false;
    uint32_t magic = le32(bytes);
    if (magic == MH_MAGIC_64 || magic == MH_CIGAM_64 || magic == MH_MAGIC || magic == MH_CIGAM)
        return true;
    uint32_t fat = be32(bytes), n = be32(bytes + 4);
    return (fat == FAT_MAGIC || fat == FAT_MAGIC_64) && n > 0 && n <= FAT_MAX_ARCHS;
}

/* A universal file: the slice of `arch` (or x86_64, else the first) into
 * *slice, *slice_size; its architectures listed in `held`. */
static int pick_slice(struct macho *m, const uint8_t *bytes, size_t size, const char *arch, const uint8_t **slice,
                      size_t *slice_size, char *held, size_t held_len)
{
    bool wide = be32(bytes) == FAT_MAGIC_64;
    uint32_t n = be32(bytes + 4);
    size_t entry = wide ? 32 : 20;
    if (!inside(size, 8, (uint64_t)n * entry))
        return fail(m, "a universal Mach-O file whose table of %u architectures runs past its end (%zu bytes)", n,
                    size);
    int chosen = -1, x86_64 = -1;
    size_t used = 0;
    held[0] = '\0';
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *a = bytes + 8 + i * entry;
        const char *name = cpu_name(be32(a));
        char unknown[24];
        if (!name) {
            snprintf(unknown, sizeof unknown, "cpu 0x%x", be32(a));
            name = unknown;
        }
        if (used < held_len)
            used += (size_t)snprintf(held + used, held_len - used, "%s%s", i ? ", " : "", name);
        if (arch && strcmp(arch, name) == 0 && chosen < 0)
            chosen = (int)i;
        if (strcmp(name, "x86_64") == 0 && x86_64 < 0)
            x86_64 = (int)i;
    }
    if (arch && chosen < 0)
        return fail(m, "no %s slice in this universal file (it holds %s)", arch, held);
    if (!arch)
        chosen = x86_64 >= 0 ? x86_64 : 0;
    const uint8_t *a = bytes + 8 + (size_t)chosen * entry;
    uint64_t off = wide ? be64(a + 8) : be32(a + 8), len = wide ? be64(a + 16) : be32(a + 12);
    if (!inside(size, off, len))
        return fail(m, "the %s slice (offset %llu, %llu bytes) runs past the file's end (%zu bytes)",
                    cpu_name(be32(a)) ? cpu_name(be32(a)) : "chosen", (unsigned long long)off,
                    (unsigned long long)len, size);
    *slice = bytes + off;
    *slice_size = (size_t)len;
    return 0;
}

static int read_segment(struct macho *m, const uint8_t *c, uint32_t cmdsize)
{
    if (cmdsize < 72)
        return fail(m, "an LC_SEGMENT_64 of %u bytes (a segment takes 72)", cmdsize);
    uint32_t nsects = le32(c + 64);
    if ((uint64_t)nsects * 80 > cmdsize - 72)
        return fail(m, "an LC_SEGMENT_64 with %u sections in %u bytes", nsects, cmdsize);
    if (m->segment_count == MAX_SEGMENTS)
        return fail(m, "more than %d segments", MAX_SEGMENTS);
    struct segment *s = &m->segments[m->segment_count++];
    s->vmaddr = le64(c + 24);
    s->vmsize = le64(c + 32);
    for (uint32_t i = 0; i < nsects; i++) {
        const uint8_t *q = c + 72 + (size_t)i * 80;
        if (m->section_count == MAX_SECTIONS)
            return fail(m, "more than %d sections", MAX_SECTIONS);
        struct section *x = &m->sections[m->section_count++];
        name16(x->name, q);
        name16(x->segment, q + 16);
        char both[40];   /* 16 + 1 + 16 */
        snprintf(both, sizeof both, "%s,%s", x->segment, x->name);
        if (!(x->both = binary_keep(m->b, both, strlen(both))))
            return fail(m, "out of memory");
        x->addr = le64(q + 32);
        x->size = le64(q + 40);
        x->flags = le32(q + 64);
        x->reserved1 = le32(q + 68);
        x->reserved2 = le32(q + 72);
    }
    return 0;
}

/* A dylib load command's path: an offset inside the command, NUL-terminated there. */
static int read_dylib(struct macho *m, const uint8_t *c, uint32_t cmdsize)
{
    if (cmdsize < 24)
        return fail(m, "a dylib load command of %u bytes (it takes 24)", cmdsize);
    uint32_t at = le32(c + 8);
    if (at < 24 || at >= cmdsize || !memchr(c + at, '\0', cmdsize - at))
        return fail(m, "a dylib load command whose name (at %u) is not inside its %u bytes", at, cmdsize);
    if (m->dylib_count == MAX_DYLIBS)
        return fail(m, "more than %d dylibs", MAX_DYLIBS);
    const char *name = (const char *)c + at;
    if (!(m->dylibs[m->dylib_count++] = binary_keep(m->b, name, strlen(name))))
        return fail(m, "out of memory");
    return 0;
}

static int read_commands(struct macho *m)
{
    if (m->size < 32)
        return fail(m, "a Mach-O header of %zu bytes (it takes 32)", m->size);
    m->cputype = le32(m->p + 4);
    m->filetype = le32(m->p + 12);
    uint32_t ncmds = le32(m->p + 16), sizeofcmds = le32(m->p + 20);
    m->flags = le32(m->p + 24);
    if (!inside(m->size, 32, sizeofcmds))
        return fail(m, "load commands of %u bytes past the file's end (%zu bytes)", sizeofcmds, m->size);
    if ((uint64_t)ncmds * 8 > sizeofcmds)
        return fail(m, "%u load commands cannot fit in %u bytes", ncmds, sizeofcmds);
    uint32_t at = 32;
    for (uint32_t i = 0; i < ncmds; i++) {
        if (sizeofcmds - (at - 32) < 8)
            return fail(m, "load command %u starts past the commands' %u bytes", i, sizeofcmds);
        const uint8_t *c = m->p + at;
        uint32_t cmd = le32(c), cmdsize = le32(c + 4);
        if (cmdsize < 8 || cmdsize % 4 || cmdsize > sizeofcmds - (at - 32))
            return fail(m, "load command %u (0x%x) has a size of %u bytes, outside the commands' %u", i, cmd, cmdsize,
                        sizeofcmds);
        int err = 0;
        switch (cmd) {
        case LC_SEGMENT_64:
            err = read_segment(m, c, cmdsize);
            break;
        case LC_SYMTAB:
            if (cmdsize < 24)
                return fail(m, "an LC_SYMTAB of %u bytes (it takes 24)", cmdsize);
            m->has_symtab = true;
            m->symoff = le32(c + 8), m->nsyms = le32(c + 12), m->stroff = le32(c + 16), m->strsize = le32(c + 20);
            if (!inside(m->size, m->symoff, (uint64_t)m->nsyms * 16) || !inside(m->size, m->stroff, m->strsize))
                return fail(m, "LC_SYMTAB's %u symbols (at %u) or %u bytes of names (at %u) run past the file's end "
                               "(%zu bytes)", m->nsyms, m->symoff, m->strsize, m->stroff, m->size);
            break;
        case LC_DYSYMTAB:
            if (cmdsize < 80)
                return fail(m, "an LC_DYSYMTAB of %u bytes (it takes 80)", cmdsize);
            m->has_dysymtab = true;
            m->ilocalsym = le32(c + 8), m->nlocalsym = le32(c + 12);
            m->iextdefsym = le32(c + 16), m->nextdefsym = le32(c + 20);
            m->iundefsym = le32(c + 24), m->nundefsym = le32(c + 28);
            m->indirectsymoff = le32(c + 56), m->nindirectsyms = le32(c + 60);
            if (!inside(m->size, m->indirectsymoff, (uint64_t)m->nindirectsyms * 4))
                return fail(m, "LC_DYSYMTAB's %u indirect symbols (at %u) run past the file's end (%zu bytes)",
                            m->nindirectsyms, m->indirectsymoff, m->size);
            break;
        case LC_LOAD_DYLIB:
        case LC_LOAD_WEAK_DYLIB:
        case LC_REEXPORT_DYLIB:
        case LC_LAZY_LOAD_DYLIB:
        case LC_LOAD_UPWARD_DYLIB:
            err = read_dylib(m, c, cmdsize);
            break;
        case LC_DYLD_INFO:
        case LC_DYLD_INFO_ONLY:
            if (cmdsize < 48)
                return fail(m, "an LC_DYLD_INFO of %u bytes (it takes 48)", cmdsize);
            m->has_dyld_info = true;
            m->dyld_info_cmd = cmd;
            m->bind_off = le32(c + 16), m->bind_size = le32(c + 20);
            m->weak_bind_off = le32(c + 24), m->weak_bind_size = le32(c + 28);
            m->lazy_bind_off = le32(c + 32), m->lazy_bind_size = le32(c + 36);
            if (!inside(m->size, m->bind_off, m->bind_size) || !inside(m->size, m->weak_bind_off, m->weak_bind_size) ||
                !inside(m->size, m->lazy_bind_off, m->lazy_bind_size))
                return fail(m, "LC_DYLD_INFO's bind opcodes run past the file's end (%zu bytes)", m->size);
            break;
        case LC_DYLD_CHAINED_FIXUPS:
            m->chained = true;
            break;
        }
        if (err)
            return err;
        at += cmdsize;
    }
    if (m->has_dysymtab && m->has_symtab &&
        (!inside(m->nsyms, m->ilocalsym, m->nlocalsym) || !inside(m->nsyms, m->iextdefsym, m->nextdefsym) ||
         !inside(m->nsyms, m->iundefsym, m->nundefsym)))
        return fail(m, "LC_DYSYMTAB's local, external or undefined range lies outside LC_SYMTAB's %u symbols",
                    m->nsyms);
    return 0;
}

/* Symbol i's name: inside the string table and ended there, else NULL. */
static const char *symbol_name(const struct macho *m, uint32_t i, size_t *len)
{
    uint32_t strx = le32(m->p + m->symoff + (size_t)i * 16);
    if (strx >= m->strsize)
        return NULL;
    const char *s = (const char *)m->p + m->stroff + strx;
    const char *end = memchr(s, '\0', m->strsize - strx);
    if (!end)
        return NULL;
    *len = (size_t)(end - s);
    return s;
}

static const char *library_of(const struct macho *m, unsigned ordinal)
{
    if (!(m->flags & MH_TWOLEVEL))
        return "";   /* a flat namespace: any library */
    if (ordinal >= 1 && ordinal <= m->dylib_count)
        return m->dylibs[ordinal - 1];
    return ordinal == SELF_LIBRARY_ORDINAL      ? "(this file)"
           : ordinal == DYNAMIC_LOOKUP_ORDINAL ? "(dynamic lookup)"
           : ordinal == EXECUTABLE_ORDINAL     ? "(the executable)"
                                               : "(no such dylib)";
}

static bool is_code(const struct section *x)
{
    return x->flags & (S_ATTR_PURE_INSTRUCTIONS | S_ATTR_SOME_INSTRUCTIONS);
}

static int read_symbols(struct macho *m, struct binary *b)
{
    if (!m->has_symtab)
        return 0;
    for (uint32_t i = 0; i < m->nsyms; i++) {
        const uint8_t *n = m->p + m->symoff + (size_t)i * 16;
        uint8_t type = n[4], sect = n[5];
        uint16_t desc = (uint16_t)(n[6] | n[7] << 8);
        uint64_t value = le64(n + 8);
        if (type & N_STAB)
            continue;   /* a debugger's entry, not a symbol */
        size_t len;
        const char *name = symbol_name(m, i, &len);
        if (!name)
            return fail(m, "symbol %u's name lies outside the %u bytes of names", i, m->strsize);
        struct binary_symbol s = { .name = name, .section = "", .library = "" };
        if (m->has_dysymtab)
            s.bind = i - m->iundefsym < m->nundefsym    ? BINARY_UNDEFINED
                     : i - m->iextdefsym < m->nextdefsym ? BINARY_EXTERNAL
                                                         : BINARY_LOCAL;
        else
            s.bind = (type & N_TYPE) == N_UNDF ? BINARY_UNDEFINED : type & N_EXT ? BINARY_EXTERNAL : BINARY_LOCAL;
        if (s.bind == BINARY_UNDEFINED) {
            s.weak = desc & N_WEAK_REF;
            s.library = library_of(m, (desc >> 8) & 0xff);
        } else {
            s.weak = desc & N_WEAK_DEF;
            s.address = value;
            if ((type & N_TYPE) == N_ABS)
                s.section = "*ABS*";
            if ((type & N_TYPE) == N_SECT) {
                if (sect == 0 || sect > m->section_count)
                    return fail(m, "symbol %s is in section %u, of %u", name, sect, m->section_count);
                s.section = m->sections[sect - 1].both;
                s.function = is_code(&m->sections[sect - 1]);
            }
        }
        if (!binary_add_symbol(b, &s))
            return fail(m, "out of memory");
    }
    binary_sort_symbols(b);
    /* Sizes: to the next symbol at a higher address in the same section,
     * else to the section's end. */
    for (size_t i = 0; i < b->symbol_count; i++) {
        struct binary_symbol *s = &b->symbols[i];
        if (s->bind == BINARY_UNDEFINED || !*s->section)
            continue;
        const struct section *x = NULL;
        for (unsigned k = 0; k < m->section_count && !x; k++)
            if (strcmp(m->sections[k].both, s->section) == 0)
                x = &m->sections[k];
        uint64_t end = x && s->address >= x->addr && s->address - x->addr <= x->size ? x->addr + x->size : s->address;
        for (size_t j = i + 1; j < b->symbol_count && b->symbols[j].bind != BINARY_UNDEFINED; j++)
            if (b->symbols[j].address > s->address && strcmp(b->symbols[j].section, s->section) == 0) {
                if (b->symbols[j].address < end)
                    end = b->symbols[j].address;
                break;
            }
        s->size = end - s->address;
    }
    return 0;
}

/* The name of the symbol an indirect table entry points at, or NULL. */
static const char *indirect_name(const struct macho *m, uint64_t entry)
{
    if (entry >= m->nindirectsyms || !m->has_symtab)
        return NULL;
    uint32_t index = le32(m->p + m->indirectsymoff + entry * 4);
    if (index & (INDIRECT_SYMBOL_LOCAL | INDIRECT_SYMBOL_ABS) || index >= m->nsyms)
        return NULL;
    size_t len;
    return symbol_name(m, index, &len);
}

static const struct section *section_at(const struct macho *m, uint64_t address)
{
    for (unsigned k = 0; k < m->section_count; k++)
        if (address >= m->sections[k].addr && address - m->sections[k].addr < m->sections[k].size)
            return &m->sections[k];
    return NULL;
}

static int by_name(const void *a, const void *b)
{
    const struct stub *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : x->address < y->address ? -1 : x->address > y->address;
}

/* Every stub of the S_SYMBOL_STUBS sections with the symbol its indirect
 * table entry names (reserved1: the section's first entry in the table,
 * reserved2: a stub's size), sorted by name: the table has one entry per
 * stub, so there are no more stubs than entries. */
static int index_stubs(struct macho *m)
{
    for (int pass = 0; pass < 2; pass++) {
        size_t n = 0;
        for (unsigned k = 0; k < m->section_count; k++) {
            const struct section *x = &m->sections[k];
            if ((x->flags & SECTION_TYPE) != S_SYMBOL_STUBS || x->reserved2 == 0 || x->reserved1 >= m->nindirectsyms)
                continue;
            uint64_t count = x->size / x->reserved2;
            if (count > m->nindirectsyms - x->reserved1)
                count = m->nindirectsyms - x->reserved1;
            for (uint64_t j = 0; j < count; j++) {
                const char *name = indirect_name(m, (uint64_t)x->reserved1 + j);
                if (!name)
                    continue;
                if (pass == 1)
                    m->stubs[n] = (struct stub){ name, x->addr + j * x->reserved2, x->both };
                n++;
            }
        }
        if (pass == 0 && n && !(m->stubs = calloc(n, sizeof *m->stubs)))
            return fail(m, "out of memory");
        m->stub_count = n;
    }
    if (m->stub_count)
        qsort(m->stubs, m->stub_count, sizeof *m->stubs, by_name);
    return 0;
}

/* The stub that jumps through the slot of `symbol`: the first of its name. */
static void find_stub(const struct macho *m, const char *symbol, struct binary_import *imp)
{
    size_t lo = 0, hi = m->stub_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(m->stubs[mid].name, symbol) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < m->stub_count && strcmp(m->stubs[lo].name, symbol) == 0) {
        imp->stub = m->stubs[lo].address;
        imp->stub_section = m->stubs[lo].section;
    }
}

/* One bind of `name` (kept in `b`). */
static int bind_one(struct macho *m, struct binary *b, bool lazy, unsigned segment, uint64_t offset, int ordinal,
                    const char *name)
{
    if (segment >= m->segment_count || offset >= m->segments[segment].vmsize)
        return fail(m, "a bind of %s at offset 0x%llx of segment %u, outside it", name, (unsigned long long)offset,
                    segment);
    struct binary_import imp = { .symbol = name, .version = "", .slot = m->segments[segment].vmaddr + offset,
                                 .lazy = lazy, .stub_section = "", .slot_section = "" };
    imp.library = ordinal >= 0    ? library_of(m, (unsigned)ordinal)
                  : ordinal == -1            ? "(the executable)"
                  : ordinal == -2            ? "(dynamic lookup)"
                                             : "(weak: any image)";
    const struct section *x = section_at(m, imp.slot);
    imp.slot_section = x ? x->both : "(no section)";
    unsigned type = x ? x->flags & SECTION_TYPE : 0;
    imp.slot_kind = type == S_LAZY_SYMBOL_POINTERS || type == S_LAZY_DYLIB_SYMBOL_POINTERS ? "lazy pointer"
                    : type == S_NON_LAZY_SYMBOL_POINTERS                                  ? "non-lazy pointer"
                                                                                          : "pointer";
    find_stub(m, name, &imp);
    return binary_add_import(b, &imp) ? 0 : fail(m, "out of memory");
}

static bool uleb(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    for (unsigned shift = 0; *p < end && shift < 64; shift += 7) {
        uint8_t byte = *(*p)++;
        v |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

static bool sleb(const uint8_t **p, const uint8_t *end, int64_t *out)
{
    uint64_t v = 0;
    unsigned shift = 0;
    uint8_t byte = 0x80;
    while (*p < end && shift < 64 && (byte & 0x80)) {
        byte = *(*p)++;
        v |= (uint64_t)(byte & 0x7f) << shift;
        shift += 7;
    }
    if (byte & 0x80)
        return false;
    if (shift < 64 && (byte & 0x40))
        v |= ~0ull << shift;
    *out = (int64_t)v;
    return true;
}

/* Run one stream of dyld's bind opcodes (`what`: "bind", "lazy bind"),
 * recording each bind. In a lazy stream DONE ends one symbol's binding,
 * not the stream. */
static int run_binds(struct macho *m, struct binary *b, uint32_t off, uint32_t size, bool lazy, const char *what)
{
    const uint8_t *p = m->p + off, *end = p + size;
    int ordinal = 0;
    const char *symbol = NULL;   /* kept in b */
    unsigned segment = 0;
    uint64_t offset = 0, count, skip, binds = 0;
    int64_t addend;
    bool segment_set = false;
    while (p < end) {
        uint8_t byte = *p++, op = byte & BIND_OPCODE_MASK, imm = byte & BIND_IMMEDIATE_MASK;
        uint64_t value = 0;
        switch (op) {
        case BIND_OPCODE_DONE:
            if (!lazy)
                return 0;
            break;
        case BIND_OPCODE_SET_DYLIB_ORDINAL_IMM:
            ordinal = imm;
            break;
        case BIND_OPCODE_SET_DYLIB_ORDINAL_ULEB:
            if (!uleb(&p, end, &value) || value > 0xffff)
                return fail(m, "the %s opcodes: a dylib ordinal cut short or out of range", what);
            ordinal = (int)value;
            break;
        case BIND_OPCODE_SET_DYLIB_SPECIAL_IMM:
            ordinal = imm ? (int)(int8_t)(byte | BIND_OPCODE_MASK) : 0;   /* -1 executable, -2 flat, -3 weak */
            break;
        case BIND_OPCODE_SET_SYMBOL_TRAILING_FLAGS_IMM: {
            const uint8_t *nul = memchr(p, '\0', (size_t)(end - p));
            if (!nul)
                return fail(m, "the %s opcodes: a symbol name runs past their end", what);
            if (!(symbol = binary_keep(b, (const char *)p, (size_t)(nul - p))))
                return fail(m, "out of memory");
            p = nul + 1;
            break;
        }
        case BIND_OPCODE_SET_TYPE_IMM:
            break;
        case BIND_OPCODE_SET_ADDEND_SLEB:
            if (!sleb(&p, end, &addend))
                return fail(m, "the %s opcodes: an addend cut short", what);
            break;
        case BIND_OPCODE_SET_SEGMENT_AND_OFFSET_ULEB:
            if (!uleb(&p, end, &offset))
                return fail(m, "the %s opcodes: an offset cut short", what);
            segment = imm, segment_set = true;
            break;
        case BIND_OPCODE_ADD_ADDR_ULEB:
            if (!uleb(&p, end, &value))
                return fail(m, "the %s opcodes: an offset cut short", what);
            offset += value;
            break;
        case BIND_OPCODE_DO_BIND:
        case BIND_OPCODE_DO_BIND_ADD_ADDR_ULEB:
        case BIND_OPCODE_DO_BIND_ADD_ADDR_IMM_SCALED:
        case BIND_OPCODE_DO_BIND_ULEB_TIMES_SKIPPING_ULEB:
            count = 1, skip = 0;
            if (op == BIND_OPCODE_DO_BIND_ULEB_TIMES_SKIPPING_ULEB &&
                (!uleb(&p, end, &count) || !uleb(&p, end, &skip)))
                return fail(m, "the %s opcodes: a count or a skip cut short", what);
            if (!symbol || !segment_set)
                return fail(m, "the %s opcodes bind before naming a symbol and a segment", what);
            if (count > BINDS_MAX || binds + count > BINDS_MAX)
                return fail(m, "the %s opcodes bind more than %d times", what, BINDS_MAX);
            for (uint64_t k = 0; k < count; k++) {
                if (bind_one(m, b, lazy, segment, offset, ordinal, symbol))
                    return -1;
                offset += 8 + skip;
            }
            binds += count;
            if (op == BIND_OPCODE_DO_BIND_ADD_ADDR_ULEB) {
                if (!uleb(&p, end, &value))
                    return fail(m, "the %s opcodes: an offset cut short", what);
                offset += value;
            } else if (op == BIND_OPCODE_DO_BIND_ADD_ADDR_IMM_SCALED) {
                offset += (uint64_t)imm * 8;
            }
            break;
        case BIND_OPCODE_THREADED:
            return fail(m, "the %s opcodes use threaded binds (BIND_OPCODE_THREADED, arm64e), which memprof does "
                           "not read", what);
        default:
            return fail(m, "the %s opcodes hold an unknown opcode 0x%02x", what, byte);
        }
    }
    return 0;
}

/* Before LC_DYLD_INFO (Mac OS X 10.5 and older, the seeds' time) dyld
 * found what to bind in the indirect symbol table itself: each lazy or
 * non-lazy pointer's entry names its symbol, whose library ordinal names
 * the dylib. */
static int read_indirect_imports(struct macho *m, struct binary *b)
{
    for (unsigned k = 0; k < m->section_count; k++) {
        const struct section *x = &m->sections[k];
        unsigned type = x->flags & SECTION_TYPE;
        bool lazy = type == S_LAZY_SYMBOL_POINTERS || type == S_LAZY_DYLIB_SYMBOL_POINTERS;
        if ((!lazy && type != S_NON_LAZY_SYMBOL_POINTERS) || x->reserved1 >= m->nindirectsyms)
            continue;
        uint64_t count = x->size / 8;
        if (count > m->nindirectsyms - x->reserved1)
            count = m->nindirectsyms - x->reserved1;
        for (uint64_t j = 0; j < count; j++) {
            uint32_t index = le32(m->p + m->indirectsymoff + ((uint64_t)x->reserved1 + j) * 4);
            size_t len;
            const char *name = index & (INDIRECT_SYMBOL_LOCAL | INDIRECT_SYMBOL_ABS) || index >= m->nsyms
                                   ? NULL
                                   : symbol_name(m, index, &len);
            if (!name)
                continue;   /* a pointer to the file's own code or data: nothing to bind */
            const uint8_t *n = m->p + m->symoff + (size_t)index * 16;
            struct binary_import imp = { .symbol = binary_keep(b, name, len), .version = "", .stub_section = "",
                                         .slot = x->addr + j * 8, .slot_section = x->both, .lazy = lazy,
                                         .slot_kind = lazy ? "lazy pointer" : "non-lazy pointer",
                                         .library = library_of(m, n[7]) };
            if (!imp.symbol)
                return fail(m, "out of memory");
            find_stub(m, imp.symbol, &imp);
            if (!binary_add_import(b, &imp))
                return fail(m, "out of memory");
        }
    }
    return 0;
}

static void read_imports(struct macho *m, struct binary *b)
{
    char *err = m->err;
    size_t errlen = m->errlen;
    /* A failure here leaves the symbols: its reason is the imports'. */
    m->err = b->imports_why, m->errlen = sizeof b->imports_why;
    const struct section *authenticated = NULL;
    for (unsigned k = 0; k < m->section_count && !authenticated; k++)
        if (strncmp(m->sections[k].name, "__auth_", 7) == 0)
            authenticated = &m->sections[k];
    if (m->chained)
        fail(m, "it binds with chained fixups (LC_DYLD_CHAINED_FIXUPS), which memprof does not read");
    else if (authenticated)
        fail(m, "it holds arm64e's signed pointers (%s), which memprof does not read", authenticated->both);
    else if (m->filetype == MH_OBJECT)
        fail(m, "an object file (MH_OBJECT): what it imports is bound by the linker, not by dyld");
    else if (m->filetype == MH_DSYM)
        fail(m, "a dSYM companion (MH_DSYM): debug information only, nothing is bound");
    else if (!m->has_dyld_info && !m->has_dysymtab)
        fail(m, "it has neither LC_DYLD_INFO nor an indirect symbol table: nothing says what dyld binds");
    else if (!m->has_dyld_info ? index_stubs(m) == 0 && read_indirect_imports(m, b) == 0
                               : index_stubs(m) == 0 && run_binds(m, b, m->bind_off, m->bind_size, false, "bind") == 0 &&
                                     run_binds(m, b, m->lazy_bind_off, m->lazy_bind_size, true, "lazy bind") == 0) {
        binary_sort_imports(b);
        b->imports_read = true;
    }
    m->err = err, m->errlen = errlen;
}

static const char *file_kind(uint32_t filetype)
{
    switch (filetype) {
    case MH_OBJECT: return "object";
    case MH_EXECUTE: return "executable";
    case MH_DYLIB: return "dynamically linked shared library";
    case MH_BUNDLE: return "bundle";
    case MH_DSYM: return "dSYM companion";
    }
    return "file";
}

int macho_read(struct binary *b, const uint8_t *bytes, size_t size, const char *arch, char *err, size_t errlen)
{
    struct macho *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    m->err = err, m->errlen = errlen;
    m->b = b;
    int rc = 0;
    char universal[160] = "";
    const uint8_t *slice = bytes;
    size_t slice_size = size;
    uint32_t fat = be32(bytes);
    if (fat == FAT_MAGIC || fat == FAT_MAGIC_64) {
        char held[128];
        rc = pick_slice(m, bytes, size, arch, &slice, &slice_size, held, sizeof held);
        snprintf(universal, sizeof universal, "universal (%s): ", held);
    }
    uint32_t magic = rc == 0 && slice_size >= 4 ? le32(slice) : 0;
    if (rc == 0 && (magic == MH_MAGIC || magic == MH_CIGAM))
        rc = fail(m, "a 32-bit Mach-O file: memprof reads 64-bit ones");
    else if (rc == 0 && magic == MH_CIGAM_64)
        rc = fail(m, "a big-endian Mach-O file: memprof reads little-endian ones");
    else if (rc == 0 && magic != MH_MAGIC_64)
        rc = fail(m, "the slice holds no 64-bit Mach-O header");
    m->p = slice, m->size = slice_size;
    if (rc == 0)
        rc = read_commands(m);
    const char *cpu = rc == 0 ? cpu_name(m->cputype) : NULL;
    if (rc == 0 && arch && !*universal && (!cpu || strcmp(cpu, arch) != 0))
        rc = fail(m, "a %s file, not %s", cpu ? cpu : "foreign", arch);
    if (rc == 0) {
        snprintf(b->format, sizeof b->format, "Mach-O %s64-bit %s %s", universal, cpu ? cpu : "(unknown cpu)",
                 file_kind(m->filetype));
        rc = read_symbols(m, b);
    }
    if (rc == 0) {
        read_imports(m, b);
        snprintf(b->sources, sizeof b->sources,
                 "symbols from LC_SYMTAB%s (sizes to the next symbol: Mach-O keeps none); imports from %s, "
                 "stubs from the indirect symbol table",
                 m->has_dysymtab ? " split by LC_DYSYMTAB" : "",
                 m->has_dyld_info ? (m->dyld_info_cmd == LC_DYLD_INFO_ONLY ? "LC_DYLD_INFO_ONLY's bind and lazy bind opcodes"
                                                                           : "LC_DYLD_INFO's bind and lazy bind opcodes")
                 : m->has_dysymtab ? "the indirect symbol table's pointers (no LC_DYLD_INFO: a file for Mac OS X 10.5 or older)"
                                   : "nowhere");
    }
    free(m->stubs);
    free(m);
    return rc;
}
