/* Allocation wrappers (see heap_wrappers.h). The table is a sorted array of
 * code ranges, built whole and then published by one pointer store: a hook
 * reads whichever table is current, and a rebuild never writes the table a
 * hook may be reading (two tables, used in turn). */
#include "heap_wrappers.h"
#include "heap_hooks.h"
#include "heap_wrapper_names.h"
#include "../../arch/code_scan.h"
#include "../../objfile/disk_symbols.h"
#include "../../objfile/hash.h"
#include "../../objfile/object.h"
#include "../../util/maps.h"
#include "../../util/pages.h"
#include "../../util/sort.h"
#include "../../unwind/cfi.h"
#include <dlfcn.h>
#include <elf.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OBJECTS 512
#define MAX_PATTERNS 32
#define CALLEE_DEPTH 2   /* ruby_xmalloc -> ruby_xmalloc_body -> objspace_xmalloc0 */

#define MAX_RANGES HEAP_WRAPPER_RANGES

static struct heap_wrapper_table *tables[2];
struct heap_wrapper_table *heap_wrappers_published;
uint64_t heap_wrappers_generations;   /* tables published */
static char patterns_seen[1024];

static const char *const builtin[] = { HEAP_WRAPPER_NAMES };

static int compare_name(const void *key, const void *entry)
{
    return strcmp(key, *(const char *const *)entry);
}

struct build {
    struct heap_wrapper_table *table;
    bool full;
    char patterns[MAX_PATTERNS][128];
    bool matched[MAX_PATTERNS];
    size_t pattern_count;
    struct maps maps;               /* read once: every wrapper's code is scanned */
    bool have_maps;
    /* Functions whose callees were looked at, and to what depth: a helper
     * many wrappers call is scanned once. */
    struct { uintptr_t start; int depth; } seen[256];
    size_t seen_count;
    uintptr_t allocators[16];       /* the object's malloc, free...: hooked, never looked into */
    size_t allocator_count;
};

/* Whether `start`'s callees were looked at to `depth` or deeper; records it. */
static bool seen_before(struct build *b, uintptr_t start, int depth)
{
    for (size_t i = 0; i < b->seen_count; i++)
        if (b->seen[i].start == start) {
            if (b->seen[i].depth >= depth)
                return true;
            b->seen[i].depth = depth;
            return false;
        }
    if (b->seen_count < sizeof b->seen / sizeof *b->seen)
        b->seen[b->seen_count++] = (__typeof__(b->seen[0])){ start, depth };
    return false;
}

static bool is_allocator(const struct build *b, uintptr_t pc)
{
    for (size_t i = 0; i < b->allocator_count; i++)
        if (b->allocators[i] == pc)
            return true;
    return false;
}

static void add(struct build *b, uintptr_t start, uintptr_t end)
{
    if (end <= start)
        return;
    if (b->table->count == MAX_RANGES) {
        b->full = true;
        return;
    }
    b->table->ranges[b->table->count++] = (struct heap_wrapper_range){ start, end };
}

/* A pattern matches a name as the symbol table has it, or a C++ name as
 * the developer wrote it ("Pool::take(unsigned long)"), demangled with the
 * process's own libstdc++ when it has one (this runs before the hooks), or
 * the function a compiler's clone was made from. */
static bool user_named(struct build *b, const char *name)
{
    typedef char *demangle_fn(const char *, char *, size_t *, int *);
    static demangle_fn *demangle;
    static bool looked;
    if (!looked) {
        looked = true;
        *(void **)&demangle = dlsym(RTLD_DEFAULT, "__cxa_demangle");
    }
    char *plain = NULL;
    int status = 0;
    if (demangle && strncmp(name, "_Z", 2) == 0)
        plain = demangle(name, NULL, NULL, &status);
    /* A compiler's clone is its function: checked_alloc.constprop.0, .isra.0, .part.0. */
    char base[256];
    const char *dot = strchr(name, '.');
    snprintf(base, sizeof base, "%.*s", dot ? (int)(dot - name) : (int)strlen(name), name);
    bool any = false;
    for (size_t i = 0; i < b->pattern_count; i++)
        if (fnmatch(b->patterns[i], name, 0) == 0 || (dot && fnmatch(b->patterns[i], base, 0) == 0) ||
            (plain && fnmatch(b->patterns[i], plain, 0) == 0))
            any = b->matched[i] = true;
    free(plain);
    return any;
}

/* A PLT entry of `o`: its first instructions jump through one of the
 * object's jump slots. */
static bool is_plt_entry(const struct elf_object *o, uintptr_t pc)
{
    uintptr_t slot;
    if (!call_scan_plt_slot(pc, &slot))
        return false;
    for (size_t r = 0; r < o->jmprel_size / sizeof *o->jmprel; r++)
        if (o->base + o->jmprel[r].r_offset == slot)
            return true;
    return false;
}

/* Each callee once, with its extent from the unwind table's lookup. */
struct callees {
    const struct elf_object *o;
    uintptr_t start, end;
    struct heap_wrapper_range found[64];
    size_t count;
};

/* A call or jump to another function's first byte in the same object (a
 * byte that only looks like a call, inside another instruction, would have
 * to name one exactly: arch/code_scan.h). */
static int note_callee(void *ctx, uintptr_t pc, uintptr_t target)
{
    (void)pc;
    struct callees *c = ctx;
    uintptr_t from, to;
    if (c->count == sizeof c->found / sizeof *c->found || target < c->o->start || target >= c->o->end ||
        (target >= c->start && target < c->end))
        return 0;
    for (size_t i = 0; i < c->count; i++)
        if (c->found[i].start == target)
            return 0;
    if (cfi_function_at(target, &from, &to) && from == target)
        c->found[c->count++] = (struct heap_wrapper_range){ from, to };
    return 0;
}

/* The functions a wrapper calls or jumps to in its own object (the static
 * helpers that call malloc), to CALLEE_DEPTH, their extent from the unwind
 * tables. */
static void add_callees(struct build *b, const struct elf_object *o, uintptr_t start, uintptr_t end, int depth);

/* The same, whether or not `start` was seen: for a wrapper claimed first. */
static void add_callees_of(struct build *b, const struct elf_object *o, uintptr_t start, uintptr_t end, int depth)
{
    if (depth == 0 || !b->have_maps)
        return;
    struct callees c = { .o = o, .start = start, .end = end };
    if (!maps_readable(&b->maps, start, end - start))
        return;
    call_scan(start, end, note_callee, &c);
    for (size_t i = 0; i < c.count; i++) {
        uintptr_t from = c.found[i].start, to = c.found[i].end;
        if (is_allocator(b, from))
            continue;   /* the allocator itself */
        if (to - from > 1 << 20 || is_plt_entry(o, from))
            continue;
        add(b, from, to);
        add_callees(b, o, from, to, depth - 1);
    }
}

static void add_callees(struct build *b, const struct elf_object *o, uintptr_t start, uintptr_t end, int depth)
{
    if (depth > 0 && !seen_before(b, start, depth))
        add_callees_of(b, o, start, end, depth);
}

static bool is_function(const ElfW(Sym) *sym)
{
    return sym->st_shndx != SHN_UNDEF && ELF64_ST_TYPE(sym->st_info) == STT_FUNC && sym->st_size;
}

static void add_symbol(struct build *b, const struct elf_object *o, const ElfW(Sym) *sym)
{
    if (!is_function(sym))
        return;
    uintptr_t start = o->base + sym->st_value;
    add(b, start, start + sym->st_size);
    add_callees(b, o, start, start + sym->st_size, CALLEE_DEPTH);
}

static void add_exported(struct build *b, const struct elf_object *o)
{
#define HOOKED_NAME(name, ret, params, args) #name,
    static const char *const allocators[] = { HEAP_HOOKS(HOOKED_NAME) };
#undef HOOKED_NAME
    _Static_assert(sizeof allocators / sizeof *allocators <= sizeof b->allocators / sizeof *b->allocators,
                   "room for every hooked allocator");
    b->allocator_count = 0;
    for (size_t k = 0; k < sizeof allocators / sizeof *allocators; k++) {
        uintptr_t at = elf_object_symbol_address(o, allocators[k]);
        if (at)
            b->allocators[b->allocator_count++] = at;
    }
    /* The built-in names through the object's hash table, as the loader
     * finds them: a few lookups rather than a pass over every symbol. All
     * are claimed at full depth before any is scanned, so that one another
     * calls (vasprintf from asprintf) or an alias (__strdup) is scanned once. */
    const ElfW(Sym) *claimed[sizeof builtin / sizeof *builtin];
    size_t claimed_count = 0;
    for (size_t k = 0; k < sizeof builtin / sizeof *builtin; k++) {
        const ElfW(Sym) *sym = elf_object_lookup(o, builtin[k]);
        if (!sym || !is_function(sym))
            continue;
        add(b, o->base + sym->st_value, o->base + sym->st_value + sym->st_size);
        if (!seen_before(b, o->base + sym->st_value, CALLEE_DEPTH))
            claimed[claimed_count++] = sym;
    }
    for (size_t k = 0; k < claimed_count; k++)
        add_callees_of(b, o, o->base + claimed[k]->st_value, o->base + claimed[k]->st_value + claimed[k]->st_size,
                       CALLEE_DEPTH);
    if (!b->pattern_count)
        return;
    size_t n = elf_object_symbol_count(o);
    for (size_t i = 1; i < n; i++) {
        const char *name = elf_object_symbol_name(o, i);
        if (name && !bsearch(name, builtin, sizeof builtin / sizeof *builtin, sizeof *builtin, compare_name) &&
            user_named(b, name))
            add_symbol(b, o, &o->symtab[i]);
    }
}

/* The code of libstdc++ itself: containers, strings, operator new. */
static void add_whole_object(struct build *b, const struct elf_object *o)
{
    for (ElfW(Half) i = 0; i < o->phnum; i++)
        if (o->phdr[i].p_type == PT_LOAD && (o->phdr[i].p_flags & PF_X))
            add(b, o->base + o->phdr[i].p_vaddr, o->base + o->phdr[i].p_vaddr + o->phdr[i].p_memsz);
}

static int disk_function(void *ctx, const char *name, uintptr_t address, size_t size)
{
    struct build *b = ctx;
    if (size && (heap_wrapper_is_std(name) || (b->pattern_count && user_named(b, name))))
        add(b, address, address + size);
    return 0;
}

static int by_start(const void *x, const void *y)
{
    const struct heap_wrapper_range *a = x, *b = y;
    if (a->start != b->start)
        return (a->start > b->start) - (a->start < b->start);
    return (a->end > b->end) - (a->end < b->end);   /* a range added twice: side by side */
}

bool heap_wrappers_build(const char *patterns, char *message, size_t size)
{
    struct build b = { 0 };
    snprintf(patterns_seen, sizeof patterns_seen, "%s", patterns ? patterns : "");
    for (const char *p = patterns_seen; *p && b.pattern_count < MAX_PATTERNS;) {
        size_t len = strcspn(p, ",");
        if (len && len < sizeof b.patterns[0])
            snprintf(b.patterns[b.pattern_count++], sizeof b.patterns[0], "%.*s", (int)len, p);
        p += len + (p[len] == ',');
    }
    struct heap_wrapper_table *next = heap_wrappers_published == tables[0] && tables[0] ? tables[1] : tables[0];
    if (!next && !(next = pages_alloc(sizeof *next)))
        return snprintf(message, size, "memprof: out of memory for the wrappers' table"), false;
    if (!tables[0])
        tables[0] = next;
    else if (!tables[1] && next != tables[0])
        tables[1] = next;
    next->count = 0;
    b.table = next;

    struct elf_object *objects = pages_alloc(MAX_OBJECTS * sizeof *objects);
    if (!objects)
        return snprintf(message, size, "memprof: out of memory for the wrappers' table"), false;
    size_t n = elf_objects_snapshot(objects, MAX_OBJECTS);
    if (n > MAX_OBJECTS)
        n = MAX_OBJECTS;
    const struct elf_object *self = elf_objects_find(objects, n, (uintptr_t)heap_wrappers_build);
    b.have_maps = maps_load(&b.maps) == 0;
    bool cxx = false;
    for (size_t i = 0; i < n; i++) {
        const struct elf_object *o = &objects[i];
        if (o == self || (o->kind != ELF_OBJECT_PROGRAM && o->kind != ELF_OBJECT_LIBRARY))
            continue;
        if (strstr(o->name, "/libstdc++.so")) {
            add_whole_object(&b, o);
            cxx = true;
        } else {
            add_exported(&b, o);
        }
    }
    /* The program's own functions from its symbol table on disk: the std::
     * code it instantiated (a C++ program) and the user's names. */
    for (size_t i = 0; i < n; i++)
        if (objects[i].kind == ELF_OBJECT_PROGRAM && (cxx || b.pattern_count)) {
            char why[256];
            disk_symbols_each(&objects[i], disk_function, &b, why, sizeof why);
        }
    pages_free(objects, MAX_OBJECTS * sizeof *objects);
    if (b.have_maps)
        maps_release(&b.maps);

    qsort(next->ranges, next->count, sizeof *next->ranges, by_start);
    /* A function reached by two paths was added twice: once is enough, and
     * the lookup's look-back then sees more of the ranges around a pc. */
    size_t kept = 0;
    for (size_t i = 0; i < next->count; i++)
        if (!kept || next->ranges[i].start != next->ranges[kept - 1].start ||
            next->ranges[i].end != next->ranges[kept - 1].end)
            next->ranges[kept++] = next->ranges[i];
    next->count = kept;
    __atomic_store_n(&heap_wrappers_published, next, __ATOMIC_RELEASE);
    __atomic_add_fetch(&heap_wrappers_generations, 1, __ATOMIC_RELEASE);

    bool ok = true;
    for (size_t i = 0; i < b.pattern_count; i++)
        if (!b.matched[i] && ok) {
            snprintf(message, size, "memprof: wrapper '%s' names no function of the program or its libraries",
                     b.patterns[i]);
            ok = false;
        }
    if (ok && b.full) {
        snprintf(message, size, "memprof: more than %d wrapper functions: the rest are not looked through",
                 MAX_RANGES);
        ok = false;
    }
    return ok;
}

bool heap_wrappers_contain(uintptr_t pc)
{
    const struct heap_wrapper_table *t = __atomic_load_n(&heap_wrappers_published, __ATOMIC_ACQUIRE);
    if (!t || !t->count)
        return false;
    size_t lo = sorted_first_above(t->ranges, t->count, sizeof *t->ranges, pc);
    /* Ranges may nest (a helper found twice): look back a little. */
    for (size_t i = lo; i-- > 0 && lo - i <= 4;)
        if (pc < t->ranges[i].end)
            return true;
    return false;
}

const char *heap_wrappers_patterns(void)
{
    return patterns_seen;
}
