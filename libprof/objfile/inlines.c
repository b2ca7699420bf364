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

struct span_report { struct walk *w; bool inlined; };

static void report_range(void *ctx, uint64_t start, uint64_t end)
{
    struct span_report *r = ctx;
    if (!r->w->stop && r->w->each(r->w->ctx, start, end, r->inlined))
        r->w->stop = true;
}

static bool report_copy(void *ctx, Dwarf_Die copy, Dwarf_Die function, bool inlined)
{
    struct walk *w = ctx;
    (void)function;
    struct span_report r = { w, inlined };
    dwarf_walk_ranges(w->dbg, copy, w->cu_base, report_range, &r);
    return w->stop;
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
        dwarf_walk_copies(w.dbg, cu, name, report_copy, &w);
        dwarf_dealloc(w.dbg, cu, DW_DLA_DIE);
    }
    dwarf_walk_close(file);
    return 0;
}
