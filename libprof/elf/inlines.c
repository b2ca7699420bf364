#include "inlines.h"
#include "dwarf_walk.h"
#include <dwarf.h>
#include <libdwarf.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MAX_DEPTH 64

struct walk {
    Dwarf_Debug dbg;
    const char *name;
    elf_span_fn *each;
    void *ctx;
    bool stop;
    uint64_t cu_base;
};

/* The name of the DIE an attribute refers to (DW_AT_abstract_origin,
 * DW_AT_specification), following one more reference if it has no name. */
static bool refers_to(struct walk *w, Dwarf_Die die, Dwarf_Half attr_name, int hops)
{
    Dwarf_Attribute attr;
    Dwarf_Error error = NULL;
    Dwarf_Off offset;
    Dwarf_Die target;
    if (hops > 2 || dwarf_attr(die, attr_name, &attr, &error) != DW_DLV_OK)
        return false;
    bool found = false;
    if (dwarf_global_formref(attr, &offset, &error) == DW_DLV_OK &&
        dwarf_offdie_b(w->dbg, offset, 1, &target, &error) == DW_DLV_OK) {
        char *name = NULL;
        if (dwarf_diename(target, &name, &error) == DW_DLV_OK)
            found = strcmp(name, w->name) == 0;
        else
            found = refers_to(w, target, DW_AT_abstract_origin, hops + 1) ||
                    refers_to(w, target, DW_AT_specification, hops + 1);
        dwarf_dealloc(w->dbg, target, DW_DLA_DIE);
    }
    dwarf_dealloc(w->dbg, attr, DW_DLA_ATTR);
    return found;
}

static bool is_named(struct walk *w, Dwarf_Die die)
{
    char *name = NULL;
    Dwarf_Error error = NULL;
    if (dwarf_diename(die, &name, &error) == DW_DLV_OK)
        return strcmp(name, w->name) == 0;
    return refers_to(w, die, DW_AT_abstract_origin, 0) || refers_to(w, die, DW_AT_specification, 0);
}

struct span_report { struct walk *w; bool inlined; };

static void report_range(void *ctx, uint64_t start, uint64_t end)
{
    struct span_report *r = ctx;
    if (!r->w->stop && r->w->each(r->w->ctx, start, end, r->inlined))
        r->w->stop = true;
}

static void report_ranges(struct walk *w, Dwarf_Die die, bool inlined)
{
    struct span_report r = { w, inlined };
    dwarf_walk_ranges(w->dbg, die, w->cu_base, report_range, &r);
}

static void walk_children(struct walk *w, Dwarf_Die parent, int depth)
{
    Dwarf_Die child;
    Dwarf_Error error = NULL;
    if (depth > MAX_DEPTH || w->stop || dwarf_child(parent, &child, &error) != DW_DLV_OK)
        return;
    for (;;) {
        Dwarf_Half tag;
        if (dwarf_tag(child, &tag, &error) == DW_DLV_OK &&
            (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) && is_named(w, child))
            report_ranges(w, child, tag == DW_TAG_inlined_subroutine);
        walk_children(w, child, depth + 1);
        Dwarf_Die next;
        int rc = dwarf_siblingof_b(w->dbg, child, 1, &next, &error);
        dwarf_dealloc(w->dbg, child, DW_DLA_DIE);
        if (rc != DW_DLV_OK || w->stop)
            return;
        child = next;
    }
}

/* A variable's DW_AT_location of one DW_OP_addr: its address. */
static bool variable_address(struct walk *w, Dwarf_Die die, uint64_t *address)
{
    Dwarf_Attribute attr;
    Dwarf_Error error = NULL;
    if (dwarf_attr(die, DW_AT_location, &attr, &error) != DW_DLV_OK)
        return false;
    bool found = false;
    Dwarf_Unsigned length;
    Dwarf_Ptr block;
    Dwarf_Half form;
    if (dwarf_whatform(attr, &form, &error) == DW_DLV_OK && form == DW_FORM_exprloc &&
        dwarf_formexprloc(attr, &length, &block, &error) == DW_DLV_OK && length == 9 &&
        ((const uint8_t *)block)[0] == DW_OP_addr) {
        memcpy(address, (const uint8_t *)block + 1, 8);
        found = true;
    }
    dwarf_dealloc(w->dbg, attr, DW_DLA_ATTR);
    return found;
}

static void find_variable(struct walk *w, Dwarf_Die parent, int depth, uint64_t *address, bool *found)
{
    Dwarf_Die child;
    Dwarf_Error error = NULL;
    if (depth > MAX_DEPTH || *found || dwarf_child(parent, &child, &error) != DW_DLV_OK)
        return;
    for (;;) {
        Dwarf_Half tag;
        char *name = NULL;
        if (dwarf_tag(child, &tag, &error) == DW_DLV_OK && tag == DW_TAG_variable &&
            dwarf_diename(child, &name, &error) == DW_DLV_OK && strcmp(name, w->name) == 0)
            *found = variable_address(w, child, address);
        else if (dwarf_tag(child, &tag, &error) == DW_DLV_OK && (tag == DW_TAG_subprogram ||
                                                                 tag == DW_TAG_lexical_block))
            find_variable(w, child, depth + 1, address, found);   /* function-scope statics */
        Dwarf_Die next;
        int rc = dwarf_siblingof_b(w->dbg, child, 1, &next, &error);
        dwarf_dealloc(w->dbg, child, DW_DLA_DIE);
        if (rc != DW_DLV_OK || *found)
            return;
        child = next;
    }
}

int elf_variable_address(const char *path, const char *name, uint64_t *address, char *err, size_t errlen)
{
    struct walk w = { .name = name };
    struct dwarf_file *file = dwarf_walk_open(path, &w.dbg, err, errlen);
    if (!file)
        return -1;
    bool found = false;
    Dwarf_Die cu;
    while (!found && dwarf_walk_next_cu(w.dbg, &cu, NULL)) {
        find_variable(&w, cu, 0, address, &found);
        dwarf_dealloc(w.dbg, cu, DW_DLA_DIE);
    }
    dwarf_walk_close(file);
    if (!found)
        snprintf(err, errlen, "no DWARF variable %s with a static address in %s", name, path);
    return found ? 0 : -1;
}

int elf_function_spans(const char *path, const char *name, elf_span_fn *each, void *ctx, char *err, size_t errlen)
{
    struct walk w = { .name = name, .each = each, .ctx = ctx };
    struct dwarf_file *file = dwarf_walk_open(path, &w.dbg, err, errlen);
    if (!file)
        return -1;
    Dwarf_Die cu;
    while (!w.stop && dwarf_walk_next_cu(w.dbg, &cu, NULL)) {
        w.cu_base = dwarf_walk_cu_base(cu);
        walk_children(&w, cu, 0);
        dwarf_dealloc(w.dbg, cu, DW_DLA_DIE);
    }
    dwarf_walk_close(file);
    return 0;
}
