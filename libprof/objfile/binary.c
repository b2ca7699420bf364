/* A program or library file, ELF or Mach-O (see binary.h): the file is
 * mapped read-only and handed to the reader of its format. */
#include "binary_build.h"
#include "elf_binary.h"
#include "macho.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

const char *binary_keep(struct binary *b, const char *s, size_t len)
{
    if (b->string_count == b->string_cap) {
        size_t cap = b->string_cap ? 2 * b->string_cap : 256;
        char **grown = realloc(b->strings, cap * sizeof *grown);
        if (!grown)
            return NULL;
        b->strings = grown, b->string_cap = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy)
        return NULL;
    memcpy(copy, s, len);
    copy[len] = '\0';
    return b->strings[b->string_count++] = copy;
}

static const char *keep_all(struct binary *b, const char *s)
{
    return s ? binary_keep(b, s, strlen(s)) : binary_keep(b, "", 0);
}

static bool grow(void **items, size_t *cap, size_t count, size_t size)
{
    if (count < *cap)
        return true;
    size_t next = *cap ? 2 * *cap : 64;
    void *grown = realloc(*items, next * size);
    if (!grown)
        return false;
    *items = grown, *cap = next;
    return true;
}

bool binary_add_symbol(struct binary *b, const struct binary_symbol *s)
{
    if (!grow((void **)&b->symbols, &b->symbol_cap, b->symbol_count, sizeof *b->symbols))
        return false;
    struct binary_symbol copy = *s;
    if (!(copy.name = keep_all(b, s->name)) || !(copy.section = keep_all(b, s->section)) ||
        !(copy.library = keep_all(b, s->library)))
        return false;
    b->symbols[b->symbol_count++] = copy;
    return true;
}

bool binary_add_import(struct binary *b, const struct binary_import *i)
{
    if (!grow((void **)&b->imports, &b->import_cap, b->import_count, sizeof *b->imports))
        return false;
    b->imports[b->import_count++] = *i;
    return true;
}

static int by_address(const void *a, const void *b)
{
    const struct binary_symbol *x = a, *y = b;
    if (x->bind == BINARY_UNDEFINED || y->bind == BINARY_UNDEFINED) {
        if (x->bind != y->bind)
            return x->bind == BINARY_UNDEFINED ? 1 : -1;
        return strcmp(x->name, y->name);
    }
    if (x->address != y->address)
        return x->address < y->address ? -1 : 1;
    if (x->size != y->size)
        return x->size > y->size ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int by_slot(const void *a, const void *b)
{
    const struct binary_import *x = a, *y = b;
    return x->slot < y->slot ? -1 : x->slot > y->slot;
}

void binary_sort_symbols(struct binary *b)
{
    if (b->symbol_count)
        qsort(b->symbols, b->symbol_count, sizeof *b->symbols, by_address);
}

void binary_sort_imports(struct binary *b)
{
    if (b->import_count)
        qsort(b->imports, b->import_count, sizeof *b->imports, by_slot);
}

struct binary *binary_open(const char *path, const char *arch, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s is not a regular file", path);
        close(fd);
        return NULL;
    }
    size_t size = (size_t)st.st_size;
    const uint8_t *bytes = size ? mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    if (size && bytes == MAP_FAILED) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    struct binary *b = calloc(1, sizeof *b);
    char why[400] = "";
    int rc = -1;
    if (!b)
        snprintf(why, sizeof why, "out of memory");
    else if (size >= 4 && memcmp(bytes, "\177ELF", 4) == 0 && arch)
        snprintf(why, sizeof why, "--arch picks a slice of a universal Mach-O file, and this is an ELF file");
    else if (size >= 4 && memcmp(bytes, "\177ELF", 4) == 0)
        rc = elf_binary_read(b, path, fd, why, sizeof why);
    else if (macho_is(bytes, size))
        rc = macho_read(b, bytes, size, arch, why, sizeof why);
    else
        snprintf(why, sizeof why, "neither an ELF nor a Mach-O file");
    if (size)
        munmap((void *)bytes, size);
    close(fd);
    if (rc != 0) {
        snprintf(err, errlen, "%s: %s", path, why);
        binary_close(b);
        return NULL;
    }
    return b;
}

const char *binary_format(const struct binary *b)
{
    return b->format;
}

const char *binary_sources(const struct binary *b)
{
    return b->sources;
}

size_t binary_symbol_count(const struct binary *b)
{
    return b->symbol_count;
}

const struct binary_symbol *binary_symbol_at(const struct binary *b, size_t i)
{
    return i < b->symbol_count ? &b->symbols[i] : NULL;
}

bool binary_imports(const struct binary *b, const struct binary_import **imports, size_t *count, const char **why)
{
    *imports = b->imports;
    *count = b->import_count;
    *why = b->imports_why;
    return b->imports_read;
}

void binary_close(struct binary *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->string_count; i++)
        free(b->strings[i]);
    free(b->strings);
    free(b->symbols);
    free(b->imports);
    free(b);
}
