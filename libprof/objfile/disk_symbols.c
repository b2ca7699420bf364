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
typedef int memprof_elf_inline_fn(const char *path, const char *function, const char *parameter,
                                  elf_inline_fn *each, void *ctx, char *message, size_t size);
static memprof_elf_variable_fn *variable_helper;
static memprof_elf_spans_fn *spans_helper;
static memprof_elf_inline_fn *inline_helper;

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
    inline_helper = lib ? (memprof_elf_inline_fn *)dlsym(lib, "memprof_elf_inline_entries") : NULL;
    if (!helper || !variable_helper || !spans_helper || !inline_helper)
        snprintf(message, size, "memprof: cannot load %s: %s", path, dlerror());
    return helper;
}

/* Append a range; false when out of memory. */
static bool add_range(struct disk_function_set *set, uintptr_t start, size_t size)
{
    if (!pages_grow((void **)&set->functions, &set->bytes, (set->count + 1) * sizeof *set->functions, 16384))
        return false;
    set->functions[set->count++] = (struct code_range){ start, size };
    return true;
}

struct collect {
    const char *name;
    uintptr_t bias;
    struct disk_function_set *set;
    bool found, no_memory;
};

/* Whether `symbol` is `name` and a suffix GCC or LLVM gives the copies
 * they make (not NAME.cold, the part of NAME's own code it moved away);
 * *renamed when the copy is NAME itself under another name. */
static bool clone_of(const char *symbol, const char *name, bool *renamed)
{
    size_t n = strlen(name);
    if (strncmp(symbol, name, n) != 0 || symbol[n] != '.' || strstr(symbol + n, ".cold"))
        return false;
    static const char *const made[] = { "constprop.", "isra.", "part.", "specialized." };
    static const char *const names[] = { "lto_priv.", "llvm." };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strncmp(symbol + n + 1, names[i], strlen(names[i])) == 0)
            return *renamed = true;
    for (size_t i = 0; i < sizeof made / sizeof *made; i++)
        if (strncmp(symbol + n + 1, made[i], strlen(made[i])) == 0) {
            *renamed = false;
            return true;
        }
    return false;
}

static int collect_one(void *ctx, const char *name, uint64_t address, uint64_t size)
{
    struct collect *c = ctx;
    struct disk_function_set *set = c->set;
    bool renamed;
    if (strcmp(name, c->name) == 0) {
        c->found = true;
        set->address = c->bias + address;
    } else if (clone_of(name, c->name, &renamed)) {
        c->found = true;
        if (set->clone_count < DISK_CLONES_MAX) {
            struct disk_clone *k = &set->clones[set->clone_count];
            k->address = c->bias + address;
            k->renamed = renamed;
            snprintf(k->name, sizeof k->name, "%s", name);
        }
        set->clone_count++;
    }
    if (size == 0)
        return 0;
    if (!add_range(set, c->bias + address, size)) {
        c->no_memory = true;
        return 1;
    }
    return 0;
}

/* Call `visit(object, its file, ctx)` for each loaded object memprof may
 * read (the program and the libraries, not its own), until one returns
 * other than ENOENT; that status, or ENOENT. */
typedef int object_visit_fn(const struct elf_object *o, const char *path, void *ctx);

static int each_object(object_visit_fn *visit, void *ctx)
{
    enum { MAX_OBJECTS = 512 };
    struct elf_object *objects = pages_alloc(MAX_OBJECTS * sizeof *objects);
    if (!objects)
        return ENOMEM;
    size_t n = elf_objects_snapshot(objects, MAX_OBJECTS);
    const struct elf_object *self = elf_objects_find(objects, n, (uintptr_t)each_object);
    int err = ENOENT;
    for (size_t i = 0; i < n && i < MAX_OBJECTS && err == ENOENT; i++) {
        const struct elf_object *o = &objects[i];
        if (o != self && (o->kind == ELF_OBJECT_PROGRAM || o->kind == ELF_OBJECT_LIBRARY))
            err = visit(o, o->kind == ELF_OBJECT_PROGRAM ? "/proc/self/exe" : o->name, ctx);
    }
    pages_free(objects, MAX_OBJECTS * sizeof *objects);
    return err;
}

struct find_function {
    const char *name;
    memprof_elf_functions_fn *functions;
    struct disk_function_set *out;
    bool program_stripped;
    size_t libraries_stripped;
};

static int find_function_in(const struct elf_object *o, const char *path, void *ctx)
{
    struct find_function *f = ctx;
    char why[PATH_MAX + 256];
    struct collect c = { f->name, o->base, f->out, false, false };
    if (f->functions(path, collect_one, &c, why, sizeof why) == 0 && c.found)
        return c.no_memory ? ENOMEM : 0;
    /* An object whose file had no symbol table, and no debug file. */
    if (strstr(why, "symbols from .dynsym") || strstr(why, "symbols from nowhere")) {
        if (o->kind == ELF_OBJECT_PROGRAM)
            f->program_stripped = true;
        else
            f->libraries_stripped++;
    }
    disk_symbols_free(f->out);
    return ENOENT;
}

int disk_symbols_find(const char *name, struct disk_function_set *out, char *message, size_t size)
{
    memset(out, 0, sizeof *out);
    struct find_function f = { name, load_helper(message, size), out, false, 0 };
    if (!f.functions)
        return ELIBACC;
    int err = each_object(find_function_in, &f);
    if (err == ENOENT && f.program_stripped)
        snprintf(message, size,
                 "memprof: no symbol table names %s: the program is stripped and no debug file was found for it "
                 "(.gnu_debuglink or build-id; %zu libraries are stripped too)",
                 name, f.libraries_stripped);
    else if (err == ENOENT)
        snprintf(message, size, "memprof: no symbol table of the loaded objects names %s (%zu are stripped "
                 "without a debug file)", name, f.libraries_stripped);
    else if (err)
        snprintf(message, size, "memprof: out of memory");
    if (err)
        disk_symbols_free(out);
    return err;
}


struct find_variable {
    const char *name;
    uintptr_t *address;
};

static int find_variable_in(const struct elf_object *o, const char *path, void *ctx)
{
    struct find_variable *v = ctx;
    char why[PATH_MAX + 256];
    uint64_t at;
    if (variable_helper(path, v->name, &at, why, sizeof why) != 0)
        return ENOENT;
    *v->address = o->base + at;
    return 0;
}

int disk_symbols_variable(const char *name, uintptr_t *address, char *message, size_t size)
{
    if (!load_helper(message, size))
        return ELIBACC;
    int err = each_object(find_variable_in, &(struct find_variable){ name, address });
    if (err)
        snprintf(message, size, "memprof: no symbol table of the loaded objects names a variable %s", name);
    return err;
}

struct span_collect {
    const char *name;
    uintptr_t bias;
    struct disk_function_set *set;
    bool no_memory;
};

static int collect_span(void *ctx, uint64_t start, uint64_t end, int inlined)
{
    (void)inlined;   /* its own copy or an inlined one: both are its code */
    struct span_collect *c = ctx;
    if (!add_range(c->set, c->bias + start, end - start)) {
        c->no_memory = true;
        return 1;
    }
    return 0;
}

static int find_spans_in(const struct elf_object *o, const char *path, void *ctx)
{
    struct span_collect *c = ctx;
    char why[PATH_MAX + 256];
    c->bias = o->base;
    spans_helper(path, c->name, collect_span, c, why, sizeof why);
    return c->no_memory ? ENOMEM : c->set->count > 0 ? 0 : ENOENT;
}

int disk_symbols_spans(const char *name, struct disk_function_set *out, char *message, size_t size)
{
    memset(out, 0, sizeof *out);
    if (!load_helper(message, size))
        return ELIBACC;
    struct span_collect c = { name, 0, out, false };
    int err = each_object(find_spans_in, &c);
    if (err == ENOENT)
        snprintf(message, size, "memprof: no DWARF of the loaded objects (or of their debug files) has %s", name);
    else if (err)
        snprintf(message, size, "memprof: out of memory");
    if (err)
        disk_symbols_free(out);
    return err;
}

struct entry_collect {
    uintptr_t bias;
    struct disk_inline_set *set;
    struct inline_entry **entries;
    size_t count, *bytes;
    bool no_memory;
};

static int collect_entry(void *ctx, const struct inline_entry *e)
{
    struct entry_collect *c = ctx;
    if (!pages_grow((void **)c->entries, c->bytes, (c->count + 1) * sizeof **c->entries, 16384)) {
        c->no_memory = true;
        return 1;
    }
    struct inline_entry *at = &(*c->entries)[c->count++];
    *at = *e;
    at->entry += c->bias;
    if (at->further_start_of)
        at->further_start_of += c->bias;
    if (at->function_entry)
        at->function_entry += c->bias;
    if (at->body)
        at->body += c->bias;
    for (unsigned i = 0; i < e->function_ranges && i < INLINE_FUNCTION_RANGES; i++)
        at->function_start[i] += c->bias, at->function_end[i] += c->bias;
    for (unsigned i = 0; i < e->copy_ranges && i < INLINE_COPY_RANGES; i++)
        at->copy_start[i] += c->bias, at->copy_end[i] += c->bias;
    if (at->holds_high != UINT64_MAX)
        at->holds_low += c->bias, at->holds_high += c->bias;
    return 0;
}

/* The second parameter's places, in the order of the entries (the two
 * walks of the DWARF may not meet the copies in one order). */
static bool match_seconds(struct disk_inline_set *set, const struct inline_entry *found, size_t n)
{
    size_t bytes = set->count * sizeof *set->seconds;
    if (!pages_grow((void **)&set->seconds, &set->second_bytes, bytes, 4096))
        return false;
    for (size_t i = 0; i < set->count; i++) {
        struct inline_entry *to = &set->seconds[i];
        *to = (struct inline_entry){ .entry = set->entries[i].entry, .place = PARAM_UNREADABLE };
        snprintf(to->why, sizeof to->why, "this copy has no parameter %s", set->names[2]);
        for (size_t k = 0; k < n; k++)
            if (found[k].entry == set->entries[i].entry && found[k].inlined == set->entries[i].inlined)
                *to = found[k];
    }
    return true;
}

struct own_names {
    struct disk_inline_set *set;
    uintptr_t bias;
};

static int name_own_copy(void *ctx, const char *name, uint64_t address, uint64_t size)
{
    (void)size;
    struct own_names *o = ctx;
    struct disk_inline_set *set = o->set;
    for (size_t i = 0; i < set->count; i++)
        if (!set->entries[i].inlined && set->entries[i].entry == o->bias + address &&
            set->own_count < DISK_CLONES_MAX) {
            struct disk_clone *k = &set->own[set->own_count++];
            k->address = o->bias + address;
            snprintf(k->name, sizeof k->name, "%s", name);
            break;
        }
    return 0;
}

static int find_entries_in(const struct elf_object *o, const char *path, void *ctx)
{
    struct entry_collect *c = ctx;
    struct disk_inline_set *set = c->set;
    char why[PATH_MAX + 256];
    c->bias = o->base;
    c->entries = &set->entries, c->bytes = &set->bytes, c->count = 0;
    inline_helper(path, set->names[0], set->names[1], collect_entry, c, why, sizeof why);
    set->count = c->count;
    if (c->no_memory)
        return ENOMEM;
    if (set->count == 0)
        return ENOENT;
    if (set->names[2]) {
        struct inline_entry *found = NULL;
        size_t found_bytes = 0;
        c->entries = &found, c->bytes = &found_bytes, c->count = 0;
        inline_helper(path, set->names[0], set->names[2], collect_entry, c, why, sizeof why);
        bool matched = !c->no_memory && match_seconds(set, found, c->count);
        pages_free(found, found_bytes);
        if (!matched)
            return ENOMEM;
    }
    memprof_elf_functions_fn *functions = load_helper(why, sizeof why);
    functions(path, name_own_copy, &(struct own_names){ set, o->base }, why, sizeof why);
    return 0;
}

int disk_symbols_inline_entries(const char *function, const char *parameter, const char *second,
                                struct disk_inline_set *out, char *message, size_t size)
{
    memset(out, 0, sizeof *out);
    if (!load_helper(message, size))
        return ELIBACC;
    out->names[0] = function;
    out->names[1] = parameter;
    out->names[2] = second;
    struct entry_collect c = { .set = out };
    int err = each_object(find_entries_in, &c);
    if (err == ENOENT)
        snprintf(message, size, "memprof: no DWARF of the loaded objects (or of their debug files) has %s", function);
    else if (err)
        snprintf(message, size, "memprof: out of memory");
    if (err)
        disk_inline_free(out);
    return err;
}

void disk_inline_free(struct disk_inline_set *set)
{
    pages_free(set->entries, set->bytes);
    pages_free(set->seconds, set->second_bytes);
    memset(set, 0, sizeof *set);
}

void disk_symbols_free(struct disk_function_set *set)
{
    pages_free(set->functions, set->bytes);
    memset(set, 0, sizeof *set);
}

struct each_function { disk_function_fn *each; void *ctx; uintptr_t bias; };

static int each_function(void *ctx, const char *name, uint64_t address, uint64_t size)
{
    struct each_function *e = ctx;
    return e->each(e->ctx, name, e->bias + address, size);
}

int disk_symbols_each(const struct elf_object *o, disk_function_fn *each, void *ctx, char *message, size_t size)
{
    memprof_elf_functions_fn *functions = load_helper(message, size);
    if (!functions)
        return ELIBACC;
    struct each_function e = { each, ctx, o->base };
    char why[PATH_MAX + 256];
    if (functions(o->kind == ELF_OBJECT_PROGRAM ? "/proc/self/exe" : o->name, each_function, &e, why, sizeof why) != 0) {
        snprintf(message, size, "memprof: %s", why);
        return ENOENT;
    }
    return 0;
}
