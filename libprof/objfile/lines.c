/* Lines and inlined frames, read one compilation unit at a time: the CU that
 * covers an address is found from .debug_aranges (or, without it, from each
 * CU's own ranges), and only its line table and DIEs are read, once, a
 * compressed .debug_info inflated only through it (dwarf_walk_need_unit). A
 * large debug file (libc's, a C++ program's) costs what the addresses asked
 * for need, not the whole file. */
#include "lines.h"
#include "dwarf_walk.h"
#include "../util/sort.h"
#include <dwarf.h>
#include <libdwarf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DIE_DEPTH 64

/* `file`: an index into `strings`. */
struct line_row { uint64_t addr; uint32_t file; uint32_t line; bool end; };

/* A function's code or one inlined copy of it: `depth` 0 for the function,
 * n for a copy inlined n levels into it. Its name is read when first asked
 * for (an index into `strings`, 0 until then). */
struct scope {
    uint64_t start, end;
    Dwarf_Off die;
    uint32_t depth, name, call_file, call_line;
    bool named;
};

struct unit {
    Dwarf_Off offset;
    bool header;                 /* `offset` is the unit's header's (.debug_aranges'), not its DIE's */
    bool loaded;
    unsigned version;
    bool default_file_is_zero;   /* libdwarf's file 0 is the default file 1 */
    char **files;          /* the CU's file table (libdwarf's) */
    Dwarf_Signed file_count;
    struct line_row *rows;
    size_t row_count, row_cap;
    struct scope *scopes;
    size_t scope_count, scope_cap;
};

struct span { uint64_t start, end; size_t unit; };

struct elf_lines {
    struct dwarf_file *file;
    Dwarf_Debug dbg;
    const unsigned char *info;   /* .debug_info, once a unit's header was read there */
    size_t info_size;
    struct unit *units;
    size_t unit_count, unit_cap;
    size_t *unit_index;   /* hashed by offset: 1 + the unit's index, 0 free */
    size_t unit_index_cap;
    struct span *spans;
    size_t span_count, span_cap;
    char **strings;   /* file and function names, index 0 is "" */
    size_t string_count, string_cap;
    bool no_memory;
};

static bool grow(void **array, size_t *cap, size_t count, size_t size, size_t first)
{
    if (count < *cap)
        return true;
    size_t n = *cap ? *cap * 2 : first;
    void *p = realloc(*array, n * size);
    if (!p)
        return false;
    *array = p;
    *cap = n;
    return true;
}

/* Index of `name` among the strings seen (consecutive lookups mostly repeat
 * one of the last few); 0 when out of memory. */
static uint32_t intern(struct elf_lines *l, const char *name)
{
    if (!name || !*name)
        return 0;
    for (size_t i = l->string_count; i-- > 1 && l->string_count - i <= 64;)
        if (strcmp(l->strings[i], name) == 0)
            return (uint32_t)i;
    char *copy = strdup(name);
    if (!copy || !grow((void **)&l->strings, &l->string_cap, l->string_count, sizeof *l->strings, 256)) {
        free(copy);
        l->no_memory = true;
        return 0;
    }
    l->strings[l->string_count] = copy;
    return (uint32_t)l->string_count++;
}

/* --- which unit covers an address ---------------------------------------------- */

static int by_start(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

static size_t *unit_slot(size_t *index, size_t cap, const struct unit *units, Dwarf_Off offset)
{
    size_t i = (size_t)(offset * 0x9e3779b97f4a7c15u) & (cap - 1);
    while (index[i] && units[index[i] - 1].offset != offset)
        i = (i + 1) & (cap - 1);
    return &index[i];
}

/* The unit at `offset`, added when new (libc's debug file has 4,126 units:
 * a look through all of them for each was a millisecond of a first run). */
static size_t unit_at(struct elf_lines *l, Dwarf_Off offset, bool header)
{
    if (l->unit_count && l->units[l->unit_count - 1].offset == offset)   /* spans of a unit come together */
        return l->unit_count - 1;
    if (2 * (l->unit_count + 1) > l->unit_index_cap) {
        size_t cap = l->unit_index_cap ? 2 * l->unit_index_cap : 256;
        size_t *index = calloc(cap, sizeof *index);
        if (!index) {
            l->no_memory = true;
            return SIZE_MAX;
        }
        for (size_t i = 0; i < l->unit_count; i++)
            *unit_slot(index, cap, l->units, l->units[i].offset) = i + 1;
        free(l->unit_index);
        l->unit_index = index;
        l->unit_index_cap = cap;
    }
    size_t *slot = unit_slot(l->unit_index, l->unit_index_cap, l->units, offset);
    if (*slot)
        return *slot - 1;
    if (!grow((void **)&l->units, &l->unit_cap, l->unit_count, sizeof *l->units, 64)) {
        l->no_memory = true;
        return SIZE_MAX;
    }
    l->units[l->unit_count] = (struct unit){ .offset = offset, .header = header };
    *slot = ++l->unit_count;
    return l->unit_count - 1;
}

static void add_span(struct elf_lines *l, uint64_t start, uint64_t end, size_t unit)
{
    if (unit == SIZE_MAX || !grow((void **)&l->spans, &l->span_cap, l->span_count, sizeof *l->spans, 256)) {
        l->no_memory = true;
        return;
    }
    l->spans[l->span_count++] = (struct span){ start, end, unit };
}

/* The spans of .debug_aranges (DWARF 2-5: version 2 sets, 32- or 64-bit
 * DWARF), read here rather than by dwarf_get_aranges: libdwarf loads all of
 * .debug_info first, and this runs while that is being inflated. A set it
 * cannot read is skipped; its code is then named without lines. */
static bool spans_from_aranges(struct elf_lines *l)
{
    size_t size;
    const unsigned char *p = dwarf_walk_section(l->file, ".debug_aranges", &size);
    if (!p)
        return false;
    for (const unsigned char *end = p + size; p < end;) {
        const unsigned char *set = p;
        uint64_t length;
        size_t offset_size;
        if (!(p = dwarf_walk_initial_length(set, end, &length, &offset_size)) || length < 2 + offset_size + 2)
            break;
        const unsigned char *set_end = p + length;
        unsigned version = (unsigned)dwarf_walk_little_endian(p, 2);
        Dwarf_Off cu = dwarf_walk_little_endian(p + 2, offset_size);
        size_t address_size = p[2 + offset_size], segment_size = p[3 + offset_size];
        p = set_end;
        if (version != 2 || (address_size != 4 && address_size != 8) || segment_size != 0)
            continue;
        /* The pairs start at a multiple of their size from the set's start. */
        size_t pair = 2 * address_size, header = (size_t)(set_end - length - set) + 4 + offset_size;
        size_t unit = SIZE_MAX;
        for (const unsigned char *q = set + (header + pair - 1) / pair * pair; set_end - q >= (ptrdiff_t)pair; q += pair) {
            uint64_t start = dwarf_walk_little_endian(q, address_size), bytes = dwarf_walk_little_endian(q + address_size, address_size);
            if (!start && !bytes)
                break;
            if (bytes && start + bytes > start)
                add_span(l, start, start + bytes, unit == SIZE_MAX ? (unit = unit_at(l, cu, true)) : unit);
        }
    }
    return l->span_count > 0;
}

struct span_ctx { struct elf_lines *l; size_t unit; };

static void unit_range(void *ctx, uint64_t start, uint64_t end)
{
    struct span_ctx *c = ctx;
    add_span(c->l, start, end, c->unit);
}

/* Without .debug_aranges (clang's default): each CU's DIE says its ranges. */
static void spans_from_units(struct elf_lines *l)
{
    Dwarf_Die cu;
    Dwarf_Error error = NULL;
    while (dwarf_walk_next_cu(l->dbg, &cu, NULL)) {
        Dwarf_Off offset;
        if (dwarf_dieoffset(cu, &offset, &error) == DW_DLV_OK) {
            struct span_ctx c = { l, unit_at(l, offset, false) };
            dwarf_walk_ranges(l->dbg, cu, dwarf_walk_cu_base(cu), unit_range, &c);
        }
        dwarf_dealloc(l->dbg, cu, DW_DLA_DIE);
    }
}

static const struct span *span_of(const struct elf_lines *l, uint64_t addr)
{
    size_t lo = sorted_first_above(l->spans, l->span_count, sizeof *l->spans, addr);
    /* Spans may nest or overlap (a CU's range around another's): look back a little. */
    for (size_t i = lo; i-- > 0 && lo - i <= 8;)
        if (addr < l->spans[i].end)
            return &l->spans[i];
    return NULL;
}

/* --- one unit's lines and scopes ---------------------------------------------- */

static int by_address(const void *a, const void *b)
{
    const struct line_row *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return (int)y->end - (int)x->end;   /* an end at A before a start at A */
}

/* A file number of the line table or DW_AT_call_file: DWARF 5 numbers files
 * from 0, earlier versions from 1. */
static const char *file_name(const struct unit *u, uint64_t number)
{
    Dwarf_Signed index = u->version >= 5 ? (Dwarf_Signed)number : (Dwarf_Signed)number - 1;
    return index >= 0 && index < u->file_count ? u->files[index] : "??";
}

static void read_unit_lines(struct elf_lines *l, struct unit *u, Dwarf_Die cu)
{
    Dwarf_Unsigned version;
    Dwarf_Small tables;
    Dwarf_Line_Context ctx;
    Dwarf_Error error = NULL;
    if (dwarf_srclines_b(cu, &version, &tables, &ctx, &error) != DW_DLV_OK)
        return;   /* a CU without a line table */
    Dwarf_Line *lines;
    Dwarf_Signed n;
    uint32_t names[256] = { 0 };
    if (dwarf_srclines_from_linecontext(ctx, &lines, &n, &error) == DW_DLV_OK) {
        for (Dwarf_Signed i = 0; i < n; i++) {
            Dwarf_Addr addr;
            Dwarf_Unsigned lineno;
            Dwarf_Bool end = 0;
            if (dwarf_lineaddr(lines[i], &addr, &error) != DW_DLV_OK ||
                dwarf_lineno(lines[i], &lineno, &error) != DW_DLV_OK)
                continue;
            dwarf_lineendsequence(lines[i], &end, &error);
            Dwarf_Unsigned number = 0;
            uint32_t file = 0;
            if (!end && dwarf_line_srcfileno(lines[i], &number, &error) != DW_DLV_OK)
                continue;
            /* libdwarf 20210528 starts a DWARF 5 sequence's file register at
             * 0, not at 1 as DWARF 5 says (6.2.2), and reports the files a
             * program sets as they are. GCC never sets file 0, so its 0 is
             * the default 1 (they differ where a header holds the function:
             * glibc's bsearch); clang sets file 0 for the main file. */
            if (!end && u->default_file_is_zero && number == 0)
                number = 1;
            if (!end && number < sizeof names / sizeof *names && names[number]) {
                file = names[number];
            } else if (!end) {
                file = intern(l, file_name(u, number));
                if (number < sizeof names / sizeof *names)
                    names[number] = file;
            }
            if (!grow((void **)&u->rows, &u->row_cap, u->row_count, sizeof *u->rows, 256)) {
                l->no_memory = true;
                break;
            }
            u->rows[u->row_count++] = (struct line_row){ addr, file, (uint32_t)lineno, end != 0 };
        }
    }
    dwarf_srclines_dealloc_b(ctx);
    qsort(u->rows, u->row_count, sizeof *u->rows, by_address);
}

struct unit_walk {
    struct elf_lines *l;
    struct unit *u;
    uint64_t cu_base;
    struct scope scope;    /* the one whose ranges are being added */
};


/* The linkage name (mangled, as the symbol tables say) or the plain name of
 * a function, through its abstract origin or declaration. */
static const char *function_name(struct elf_lines *l, Dwarf_Die die, char *buf, size_t size, int hops)
{
    Dwarf_Debug dbg = l->dbg;
    Dwarf_Attribute attr;
    Dwarf_Error error = NULL;
    char *name = NULL;
    static const Dwarf_Half linkage[] = { DW_AT_linkage_name, DW_AT_MIPS_linkage_name };
    for (size_t i = 0; i < 2; i++)
        if (dwarf_attr(die, linkage[i], &attr, &error) == DW_DLV_OK) {
            bool ok = dwarf_formstring(attr, &name, &error) == DW_DLV_OK;
            if (ok)
                snprintf(buf, size, "%s", name);
            dwarf_dealloc(dbg, attr, DW_DLA_ATTR);
            if (ok)
                return buf;
        }
    Dwarf_Die target;
    static const Dwarf_Half refs[] = { DW_AT_abstract_origin, DW_AT_specification };
    for (size_t i = 0; hops < 4 && i < 2; i++)
        if (dwarf_walk_ref_in(l->file, dbg, die, refs[i], &target)) {
            const char *found = function_name(l, target, buf, size, hops + 1);
            dwarf_dealloc(dbg, target, DW_DLA_DIE);
            if (found)
                return found;
        }
    if (dwarf_diename(die, &name, &error) == DW_DLV_OK) {
        snprintf(buf, size, "%s", name);
        return buf;
    }
    return NULL;
}

static void scope_range(void *ctx, uint64_t start, uint64_t end)
{
    struct unit_walk *w = ctx;
    struct unit *u = w->u;
    if (!grow((void **)&u->scopes, &u->scope_cap, u->scope_count, sizeof *u->scopes, 64)) {
        w->l->no_memory = true;
        return;
    }
    u->scopes[u->scope_count] = w->scope;
    u->scopes[u->scope_count].start = start;
    u->scopes[u->scope_count++].end = end;
}

static void add_scope(struct unit_walk *w, Dwarf_Die die, uint32_t depth, bool inlined)
{
    Dwarf_Error error = NULL;
    w->scope = (struct scope){ .depth = depth };
    if (dwarf_dieoffset(die, &w->scope.die, &error) != DW_DLV_OK)
        w->scope.named = true;   /* without a name */
    Dwarf_Attribute attr;
    Dwarf_Unsigned value;
    if (inlined && dwarf_attr(die, DW_AT_call_file, &attr, &error) == DW_DLV_OK) {
        if (dwarf_formudata(attr, &value, &error) == DW_DLV_OK)
            w->scope.call_file = (uint32_t)value;
        dwarf_dealloc(w->l->dbg, attr, DW_DLA_ATTR);
    }
    if (inlined && dwarf_attr(die, DW_AT_call_line, &attr, &error) == DW_DLV_OK) {
        if (dwarf_formudata(attr, &value, &error) == DW_DLV_OK)
            w->scope.call_line = (uint32_t)value;
        dwarf_dealloc(w->l->dbg, attr, DW_DLA_ATTR);
    }
    dwarf_walk_ranges(w->l->dbg, die, w->cu_base, scope_range, w);
}

/* Functions and their inlined copies, at any depth of namespaces, classes
 * and lexical blocks. `depth`: the inline depth of the scope holding them,
 * -1 outside every function. */
static void walk_scopes(struct unit_walk *w, Dwarf_Die parent, int depth, int levels)
{
    Dwarf_Die child;
    Dwarf_Error error = NULL;
    if (levels > MAX_DIE_DEPTH || w->l->no_memory || dwarf_child(parent, &child, &error) != DW_DLV_OK)
        return;
    for (;;) {
        Dwarf_Half tag;
        if (dwarf_tag(child, &tag, &error) == DW_DLV_OK) {
            Dwarf_Bool has_code = 0;
            switch (tag) {
            case DW_TAG_subprogram:
                if ((dwarf_hasattr(child, DW_AT_low_pc, &has_code, &error) == DW_DLV_OK && has_code) ||
                    (dwarf_hasattr(child, DW_AT_ranges, &has_code, &error) == DW_DLV_OK && has_code)) {
                    add_scope(w, child, 0, false);
                    walk_scopes(w, child, 0, levels + 1);
                }
                break;
            case DW_TAG_inlined_subroutine:
                if (depth >= 0) {
                    add_scope(w, child, (uint32_t)depth + 1, true);
                    walk_scopes(w, child, depth + 1, levels + 1);
                }
                break;
            case DW_TAG_lexical_block:
            case DW_TAG_namespace:
            case DW_TAG_class_type:
            case DW_TAG_structure_type:
            case DW_TAG_union_type:
                walk_scopes(w, child, depth, levels + 1);
                break;
            default:
                break;
            }
        }
        Dwarf_Die next;
        int rc = dwarf_siblingof_b(w->l->dbg, child, 1, &next, &error);
        dwarf_dealloc(w->l->dbg, child, DW_DLA_DIE);
        if (rc != DW_DLV_OK)
            return;
        child = next;
    }
}

/* The offset of the DIE of the unit whose header is at `header` in
 * .debug_info (libdwarf's dwarf_get_cu_die_offset_given_cu_header_offset_b
 * reads .debug_info before anything has loaded it). */
static bool unit_die_offset(struct elf_lines *l, Dwarf_Off header, Dwarf_Off *die)
{
    if (!l->info && !(l->info = dwarf_walk_section(l->file, ".debug_info", &l->info_size)))
        return false;
    const unsigned char *info = l->info, *p;
    uint64_t length;
    size_t offset_size;
    if (header > l->info_size || !(p = dwarf_walk_initial_length(info + header, info + l->info_size, &length, &offset_size)) ||
        length < 2)
        return false;
    const unsigned char *end = p + length;
    unsigned version = (unsigned)dwarf_walk_little_endian(p, 2);
    size_t rest;
    if (version >= 2 && version <= 4) {
        rest = 2 + offset_size + 1;   /* version, abbreviations, address size */
    } else if (version == 5 && end - p >= 3) {
        unsigned type = p[2];         /* the unit type, then the address size and abbreviations */
        rest = 2 + 1 + 1 + offset_size + (type == DW_UT_skeleton || type == DW_UT_split_compile ? 8 : 0) +
               (type == DW_UT_type || type == DW_UT_split_type ? 8 + offset_size : 0);
    } else {
        return false;
    }
    if (rest >= (size_t)(end - p))
        return false;
    *die = (Dwarf_Off)(p + rest - info);
    return true;
}

static void load_unit(struct elf_lines *l, struct unit *u)
{
    u->loaded = true;
    Dwarf_Die cu;
    Dwarf_Error error = NULL;
    Dwarf_Off die = u->offset;
    bool found = !u->header || (dwarf_walk_need_unit(l->file, u->offset) && unit_die_offset(l, u->offset, &die));
    if (!found || dwarf_offdie_b(l->dbg, die, 1, &cu, &error) != DW_DLV_OK)
        return;
    Dwarf_Half version = 0, offset_size;
    dwarf_get_version_of_die(cu, &version, &offset_size);
    u->version = version;
    Dwarf_Attribute producer;
    char *name = NULL;
    if (version >= 5 && dwarf_attr(cu, DW_AT_producer, &producer, &error) == DW_DLV_OK) {
        u->default_file_is_zero = dwarf_formstring(producer, &name, &error) == DW_DLV_OK && strncmp(name, "GNU ", 4) == 0;
        dwarf_dealloc(l->dbg, producer, DW_DLA_ATTR);
    }
    if (dwarf_srcfiles(cu, &u->files, &u->file_count, &error) != DW_DLV_OK) {
        u->files = NULL;
        u->file_count = 0;
    }
    read_unit_lines(l, u, cu);
    struct unit_walk w = { .l = l, .u = u, .cu_base = dwarf_walk_cu_base(cu) };
    walk_scopes(&w, cu, -1, 0);
    dwarf_dealloc(l->dbg, cu, DW_DLA_DIE);
}

static const char *scope_name(struct elf_lines *l, struct scope *s)
{
    if (!s->named) {
        s->named = true;
        Dwarf_Die die;
        Dwarf_Error error = NULL;
        char name[1024];
        if (dwarf_offdie_b(l->dbg, s->die, 1, &die, &error) == DW_DLV_OK) {
            s->name = intern(l, function_name(l, die, name, sizeof name, 0));
            dwarf_dealloc(l->dbg, die, DW_DLA_DIE);
        }
    }
    return s->name ? l->strings[s->name] : NULL;
}

/* --- the interface ------------------------------------------------------------- */

struct elf_lines *elf_lines_open(const char *path, char *err, size_t errlen)
{
    struct elf_lines *l = calloc(1, sizeof *l);
    if (!l) {
        snprintf(err, errlen, "out of memory reading %s", path);
        return NULL;
    }
    if (!(l->file = dwarf_walk_open_ahead(path, &l->dbg, err, errlen))) {
        free(l);
        return NULL;
    }
    return l;
}

struct elf_lines *elf_lines_index(struct elf_lines *l, const char *path, char *err, size_t errlen)
{
    l->strings = calloc(256, sizeof *l->strings);
    l->string_cap = l->strings ? 256 : 0;
    if (l->strings && (l->strings[0] = strdup("")))
        l->string_count = 1;
    if (!spans_from_aranges(l) && dwarf_walk_need_all(l->file))
        spans_from_units(l);
    if (l->no_memory || !l->span_count || !l->string_count) {
        snprintf(err, errlen, l->span_count ? "out of memory reading %s" : "%s has no DWARF code ranges", path);
        elf_lines_free(l);
        return NULL;
    }
    qsort(l->spans, l->span_count, sizeof *l->spans, by_start);
    return l;
}

void elf_lines_plan(struct elf_lines *l, const uint64_t *addrs, size_t n)
{
    bool any = false;
    Dwarf_Off furthest = 0;
    for (size_t i = 0; i < n; i++) {
        const struct span *s = span_of(l, addrs[i]);
        if (s && l->units[s->unit].header && (!any || l->units[s->unit].offset > furthest)) {
            furthest = l->units[s->unit].offset;
            any = true;
        }
    }
    if (any)
        dwarf_walk_plan(l->file, furthest);
}

static struct unit *unit_for(struct elf_lines *l, uint64_t addr)
{
    const struct span *s = span_of(l, addr);
    if (!s)
        return NULL;
    struct unit *u = &l->units[s->unit];
    if (!u->loaded)
        load_unit(l, u);
    return u;
}

static const struct line_row *row_at(const struct unit *u, uint64_t addr)
{
    size_t lo = sorted_first_above(u->rows, u->row_count, sizeof *u->rows, addr);
    return lo == 0 || u->rows[lo - 1].end ? NULL : &u->rows[lo - 1];
}

const char *elf_lines_lookup(struct elf_lines *l, uint64_t addr, unsigned *line)
{
    struct elf_line_frame frame;
    if (!elf_lines_frames(l, addr, &frame, 1))
        return NULL;
    *line = frame.line;
    return frame.file;
}

size_t elf_lines_frames(struct elf_lines *l, uint64_t addr, struct elf_line_frame *frames, size_t max)
{
    struct unit *u = max ? unit_for(l, addr) : NULL;
    const struct line_row *row = u ? row_at(u, addr) : NULL;
    if (!row)
        return 0;
    /* The scopes holding addr, one per depth: the function, then each
     * inlined copy inside the one before. */
    struct scope *chain[MAX_DIE_DEPTH + 1] = { 0 };
    size_t deepest = 0;
    bool any = false;
    for (size_t i = 0; i < u->scope_count; i++) {
        struct scope *s = &u->scopes[i];
        if (addr >= s->start && addr < s->end && s->depth <= MAX_DIE_DEPTH && !chain[s->depth]) {
            chain[s->depth] = s;
            if (s->depth > deepest)
                deepest = s->depth;
            any = true;
        }
    }
    const char *file = l->strings[row->file];
    unsigned line = row->line;
    frames[0] = (struct elf_line_frame){ NULL, file, line };
    if (!any)
        return 1;
    size_t n = 0;
    for (size_t d = deepest + 1; d-- > 0 && n < max;) {
        if (!chain[d])
            continue;
        frames[n++] = (struct elf_line_frame){ scope_name(l, chain[d]), file, line };
        file = file_name(u, chain[d]->call_file);
        line = chain[d]->call_line;
    }
    return n;
}

void elf_lines_free(struct elf_lines *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->unit_count; i++) {
        struct unit *u = &l->units[i];
        for (Dwarf_Signed f = 0; f < u->file_count; f++)
            dwarf_dealloc(l->dbg, u->files[f], DW_DLA_STRING);
        if (u->files)
            dwarf_dealloc(l->dbg, u->files, DW_DLA_LIST);
        free(l->units[i].rows);
        free(l->units[i].scopes);
    }
    free(l->units);
    free(l->unit_index);
    free(l->spans);
    for (size_t i = 0; i < l->string_count; i++)
        free(l->strings[i]);
    free(l->strings);
    dwarf_walk_close(l->file);
    free(l);
}
