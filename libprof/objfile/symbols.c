#include "symbols.h"
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct symbol { uint64_t start, size; size_t name; };

struct elf_symbols {
    struct symbol *symbols;
    size_t count;
    char *names;          /* NUL-terminated names, back to back */
    const char *source;
};

static int by_address(const void *a, const void *b)
{
    const struct symbol *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->size > y->size ? -1 : x->size < y->size;   /* the larger alias first */
}

/* Copy the function symbols (or, with `objects`, the data objects) of one
 * symbol table section. */
static bool read_table(Elf *elf, Elf_Scn *scn, GElf_Shdr *shdr, struct elf_symbols *s, bool objects)
{
    Elf_Data *data = elf_getdata(scn, NULL);
    if (!data || shdr->sh_entsize == 0)
        return false;
    size_t n = shdr->sh_size / shdr->sh_entsize, names_len = 0, kept = 0;
    s->symbols = calloc(n ? n : 1, sizeof *s->symbols);
    if (!s->symbols)
        return false;
    size_t names_cap = 4096;
    s->names = malloc(names_cap);
    if (!s->names)
        return false;
    for (size_t i = 0; i < n; i++) {
        GElf_Sym sym;
        if (!gelf_getsym(data, (int)i, &sym))
            continue;
        int type = GELF_ST_TYPE(sym.st_info);
        bool wanted = objects ? type == STT_OBJECT : type == STT_FUNC || type == STT_GNU_IFUNC;
        if (!wanted || sym.st_shndx == SHN_UNDEF || sym.st_value == 0)
            continue;
        const char *name = elf_strptr(elf, shdr->sh_link, sym.st_name);
        if (!name || !*name)
            continue;
        size_t len = strlen(name) + 1;
        if (names_len + len > names_cap) {
            while (names_len + len > names_cap)
                names_cap *= 2;
            char *grown = realloc(s->names, names_cap);
            if (!grown)
                return false;
            s->names = grown;
        }
        memcpy(s->names + names_len, name, len);
        s->symbols[kept++] = (struct symbol){ sym.st_value, sym.st_size, names_len };
        names_len += len;
    }
    s->count = kept;
    qsort(s->symbols, s->count, sizeof *s->symbols, by_address);
    return true;
}

/* `path` opened as ELF; NULL with why in err. */
static Elf *open_elf_file(const char *path, int *fd, char *err, size_t errlen)
{
    elf_version(EV_CURRENT);
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    Elf *elf = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
    if (!elf || elf_kind(elf) != ELF_K_ELF) {
        snprintf(err, errlen, "%s is not an ELF file", path);
        if (elf)
            elf_end(elf);
        close(*fd);
        return NULL;
    }
    return elf;
}

/* The table to read: .symtab has the static functions too; .dynsym only the
 * exported ones. Its name in *source ("" and NULL when there is neither). */
static Elf_Scn *choose_table(Elf *elf, GElf_Shdr *chosen_shdr, const char **source)
{
    Elf_Scn *chosen = NULL;
    *source = "";
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
        GElf_Shdr shdr;
        if (!gelf_getshdr(scn, &shdr))
            continue;
        if (shdr.sh_type == SHT_SYMTAB || (shdr.sh_type == SHT_DYNSYM && !chosen)) {
            chosen = scn;
            *chosen_shdr = shdr;
            *source = shdr.sh_type == SHT_SYMTAB ? ".symtab" : ".dynsym";
        }
    }
    return chosen;
}

static struct elf_symbols *read_symbols(const char *path, bool objects, char *err, size_t errlen)
{
    struct elf_symbols *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    int fd;
    Elf *elf = open_elf_file(path, &fd, err, errlen);
    if (!elf) {
        free(s);
        return NULL;
    }
    GElf_Shdr chosen_shdr = { 0 };
    Elf_Scn *chosen = choose_table(elf, &chosen_shdr, &s->source);
    if (chosen && !read_table(elf, chosen, &chosen_shdr, s, objects)) {
        snprintf(err, errlen, "cannot read the symbols of %s", path);
        elf_end(elf);
        close(fd);
        elf_symbols_free(s);
        return NULL;
    }
    elf_end(elf);
    close(fd);
    return s;
}

const char *elf_symbols_table_of(const char *path, char *err, size_t errlen)
{
    int fd;
    Elf *elf = open_elf_file(path, &fd, err, errlen);
    if (!elf)
        return NULL;
    GElf_Shdr shdr;
    const char *source;
    choose_table(elf, &shdr, &source);
    elf_end(elf);
    close(fd);
    return source;
}

struct elf_symbols *elf_symbols_read(const char *path, char *err, size_t errlen)
{
    return read_symbols(path, false, err, errlen);
}

struct elf_symbols *elf_symbols_read_data(const char *path, char *err, size_t errlen)
{
    return read_symbols(path, true, err, errlen);
}

const char *elf_symbols_lookup(const struct elf_symbols *s, uint64_t addr, uint64_t *offset)
{
    /* The last symbol starting at or before addr, then back over aliases and
     * nested symbols until one covers it. */
    size_t lo = 0, hi = s ? s->count : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->symbols[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i-- > 0 && lo - i <= 16;) {
        const struct symbol *sym = &s->symbols[i];
        if (addr < sym->start + sym->size) {
            *offset = addr - sym->start;
            return s->names + sym->name;
        }
    }
    return NULL;
}

size_t elf_symbols_count(const struct elf_symbols *s)
{
    return s ? s->count : 0;
}

void elf_symbols_get(const struct elf_symbols *s, size_t i, const char **name, uint64_t *start,
                     uint64_t *size)
{
    *name = s->names + s->symbols[i].name;
    *start = s->symbols[i].start;
    *size = s->symbols[i].size;
}

const char *elf_symbols_source(const struct elf_symbols *s)
{
    return s->source;
}

void elf_symbols_free(struct elf_symbols *s)
{
    if (!s)
        return;
    free(s->symbols);
    free(s->names);
    free(s);
}
