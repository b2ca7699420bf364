/* Function symbols from files on disk (see disk_symbols.h). */
#include "disk_symbols.h"
#include "object.h"
#include "../util/pages.h"
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

typedef int memprof_elf_function_fn(void *ctx, const char *name, uint64_t address, uint64_t size);
typedef int memprof_elf_functions_fn(const char *path, memprof_elf_function_fn *each, void *ctx, char *message,
                                     size_t size);
typedef int memprof_elf_variable_fn(const char *path, const char *name, uint64_t *address, char *message,
                                    size_t size);

typedef int memprof_elf_span_fn(void *ctx, uint64_t start, uint64_t end, int inlined);
typedef int memprof_elf_spans_fn(const char *path, const char *name, memprof_elf_span_fn *each, void *ctx,
                                 char *message, size_t size);
static memprof_elf_variable_fn *variable_helper;
static memprof_elf_spans_fn *spans_helper;

/* The helper, next to this library: the build tree's .libs or pkglibdir. */
static memprof_elf_functions_fn *load_helper(char *message, size_t size)
{
    static memprof_elf_functions_fn *helper;
    if (helper)
        return helper;
    Dl_info self;
    char path[PATH_MAX];
    if (!dladdr((void *)load_helper, &self) || !self.dli_fname) {
        snprintf(message, size, "memprof: cannot tell where the runtime was loaded from");
        return NULL;
    }
    const char *slash = strrchr(self.dli_fname, '/');
    snprintf(path, sizeof path, "%.*s/libmemprof-elf.so", slash ? (int)(slash - self.dli_fname) : 1,
             slash ? self.dli_fname : ".");
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    helper = lib ? (memprof_elf_functions_fn *)dlsym(lib, "memprof_elf_functions") : NULL;
    variable_helper = lib ? (memprof_elf_variable_fn *)dlsym(lib, "memprof_elf_variable") : NULL;
    spans_helper = lib ? (memprof_elf_spans_fn *)dlsym(lib, "memprof_elf_spans") : NULL;
    if (!helper || !variable_helper || !spans_helper)
        snprintf(message, size, "memprof: cannot load %s: %s", path, dlerror());
    return helper;
}

struct collect {
    const char *name;
    uintptr_t bias;
    struct disk_function_set *set;
    bool found, no_memory;
};

static int collect_one(void *ctx, const char *name, uint64_t address, uint64_t size)
{
    struct collect *c = ctx;
    struct disk_function_set *set = c->set;
    if (strcmp(name, c->name) == 0) {
        c->found = true;
        set->address = c->bias + address;
    }
    if (size == 0)
        return 0;
    if ((set->count + 1) * sizeof *set->functions > set->bytes) {
        size_t bytes = set->bytes ? set->bytes * 2 : 16384;
        struct code_range *grown = pages_resize(set->functions, set->bytes, bytes);
        if (!grown) {
            c->no_memory = true;
            return 1;
        }
        set->functions = grown;
        set->bytes = bytes;
    }
    set->functions[set->count++] = (struct code_range){ c->bias + address, size };
    return 0;
}

int disk_symbols_find(const char *name, struct disk_function_set *out, char *message, size_t size)
{
    memset(out, 0, sizeof *out);
    memprof_elf_functions_fn *functions = load_helper(message, size);
    if (!functions)
        return ELIBACC;
    enum { MAX_OBJECTS = 512 };
    struct elf_object *objects = pages_alloc(MAX_OBJECTS * sizeof *objects);
    if (!objects)
        return ENOMEM;
    size_t n = elf_objects_snapshot(objects, MAX_OBJECTS);
    const struct elf_object *self = elf_objects_find(objects, n, (uintptr_t)disk_symbols_find);
    char why[PATH_MAX + 256];
    bool program_stripped = false;
    size_t libraries_stripped = 0;
    int err = ENOENT;
    for (size_t i = 0; i < n && i < MAX_OBJECTS && err == ENOENT; i++) {
        const struct elf_object *o = &objects[i];
        if (o == self || (o->kind != ELF_OBJECT_PROGRAM && o->kind != ELF_OBJECT_LIBRARY))
            continue;
        const char *path = o->kind == ELF_OBJECT_PROGRAM ? "/proc/self/exe" : o->name;
        struct collect c = { name, o->base, out, false, false };
        if (functions(path, collect_one, &c, why, sizeof why) != 0 || !c.found) {
            /* An object whose file had no symbol table, and no debug file. */
            if (strstr(why, "symbols from .dynsym") || strstr(why, "symbols from nowhere")) {
                if (o->kind == ELF_OBJECT_PROGRAM)
                    program_stripped = true;
                else
                    libraries_stripped++;
            }
            disk_symbols_free(out);
            continue;
        }
        err = c.no_memory ? ENOMEM : 0;
    }
    pages_free(objects, MAX_OBJECTS * sizeof *objects);
    if (err == ENOENT && program_stripped)
        snprintf(message, size,
                 "memprof: no symbol table names %s: the program is stripped and no debug file was found for it "
                 "(.gnu_debuglink or build-id; %zu libraries are stripped too)",
                 name, libraries_stripped);
    else if (err == ENOENT)
        snprintf(message, size, "memprof: no symbol table of the loaded objects names %s (%zu are stripped "
                 "without a debug file)", name, libraries_stripped);
    else if (err)
        snprintf(message, size, "memprof: out of memory");
    if (err)
        disk_symbols_free(out);
    return err;
}

int disk_symbols_variable(const char *name, uintptr_t *address, char *message, size_t size)
{
    if (!load_helper(message, size))
        return ELIBACC;
    enum { MAX_OBJECTS = 512 };
    struct elf_object *objects = pages_alloc(MAX_OBJECTS * sizeof *objects);
    if (!objects)
        return ENOMEM;
    size_t n = elf_objects_snapshot(objects, MAX_OBJECTS);
    const struct elf_object *self = elf_objects_find(objects, n, (uintptr_t)disk_symbols_variable);
    int err = ENOENT;
    char why[PATH_MAX + 256];
    for (size_t i = 0; i < n && i < MAX_OBJECTS && err == ENOENT; i++) {
        const struct elf_object *o = &objects[i];
        if (o == self || (o->kind != ELF_OBJECT_PROGRAM && o->kind != ELF_OBJECT_LIBRARY))
            continue;
        uint64_t at;
        if (variable_helper(o->kind == ELF_OBJECT_PROGRAM ? "/proc/self/exe" : o->name, name, &at, why,
                            sizeof why) == 0) {
            *address = o->base + at;
            err = 0;
        }
    }
    pages_free(objects, MAX_OBJECTS * sizeof *objects);
    if (err)
        snprintf(message, size, "memprof: no symbol table of the loaded objects names a variable %s", name);
    return err;
}

struct span_collect {
    uintptr_t bias;
    struct disk_function_set *set;
    size_t inlined;
    bool no_memory;
};

static int collect_span(void *ctx, uint64_t start, uint64_t end, int inlined)
{
    struct span_collect *c = ctx;
    struct disk_function_set *set = c->set;
    if ((set->count + 1) * sizeof *set->functions > set->bytes) {
        size_t bytes = set->bytes ? set->bytes * 2 : 4096;
        struct code_range *grown = pages_resize(set->functions, set->bytes, bytes);
        if (!grown) {
            c->no_memory = true;
            return 1;
        }
        set->functions = grown;
        set->bytes = bytes;
    }
    set->functions[set->count++] = (struct code_range){ c->bias + start, end - start };
    c->inlined += inlined != 0;
    return 0;
}

int disk_symbols_spans(const char *name, struct disk_function_set *out, size_t *inlined, char *message,
                       size_t size)
{
    memset(out, 0, sizeof *out);
    *inlined = 0;
    if (!load_helper(message, size))
        return ELIBACC;
    enum { MAX_OBJECTS = 512 };
    struct elf_object *objects = pages_alloc(MAX_OBJECTS * sizeof *objects);
    if (!objects)
        return ENOMEM;
    size_t n = elf_objects_snapshot(objects, MAX_OBJECTS);
    const struct elf_object *self = elf_objects_find(objects, n, (uintptr_t)disk_symbols_spans);
    char why[PATH_MAX + 256];
    int err = ENOENT;
    for (size_t i = 0; i < n && i < MAX_OBJECTS && err == ENOENT; i++) {
        const struct elf_object *o = &objects[i];
        if (o == self || (o->kind != ELF_OBJECT_PROGRAM && o->kind != ELF_OBJECT_LIBRARY))
            continue;
        struct span_collect c = { o->base, out, 0, false };
        spans_helper(o->kind == ELF_OBJECT_PROGRAM ? "/proc/self/exe" : o->name, name, collect_span, &c, why,
                     sizeof why);
        if (c.no_memory)
            err = ENOMEM;
        else if (out->count > 0)
            err = 0, *inlined = c.inlined;
    }
    pages_free(objects, MAX_OBJECTS * sizeof *objects);
    if (err == ENOENT)
        snprintf(message, size, "memprof: no DWARF of the loaded objects (or of their debug files) has %s", name);
    else if (err)
        snprintf(message, size, "memprof: out of memory");
    if (err)
        disk_symbols_free(out);
    return err;
}

void disk_symbols_free(struct disk_function_set *set)
{
    pages_free(set->functions, set->bytes);
    memset(set, 0, sizeof *set);
}
