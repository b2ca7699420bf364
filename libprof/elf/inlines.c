#include "inlines.h"
#include <fcntl.h>
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

static void report(struct walk *w, uint64_t start, uint64_t end, bool inlined)
{
    if (!w->stop && end > start && w->each(w->ctx, start, end, inlined))
        w->stop = true;
}

/* low_pc/high_pc, or a DWARF 5 range list. */
static void report_ranges(struct walk *w, Dwarf_Die die, bool inlined)
{
    Dwarf_Error error = NULL;
    Dwarf_Addr low, high;
    Dwarf_Half form;
    enum Dwarf_Form_Class class;
    if (dwarf_lowpc(die, &low, &error) == DW_DLV_OK &&
        dwarf_highpc_b(die, &high, &form, &class, &error) == DW_DLV_OK) {
        report(w, low, class == DW_FORM_CLASS_CONSTANT ? low + high : high, inlined);
        return;
    }
    Dwarf_Attribute attr;
    if (dwarf_attr(die, DW_AT_ranges, &attr, &error) != DW_DLV_OK)
        return;
    Dwarf_Unsigned value, count, global;
    Dwarf_Rnglists_Head head;
    if (dwarf_whatform(attr, &form, &error) == DW_DLV_OK &&
        (form == DW_FORM_rnglistx ? dwarf_formudata(attr, &value, &error)
                                  : dwarf_global_formref(attr, &value, &error)) == DW_DLV_OK &&
        dwarf_rnglists_get_rle_head(attr, form, value, &head, &count, &global, &error) == DW_DLV_OK) {
        for (Dwarf_Unsigned i = 0; i < count; i++) {
            unsigned length, code;
            Dwarf_Unsigned raw1, raw2, start, end;
            Dwarf_Bool unavailable = 0;
            if (dwarf_get_rnglists_entry_fields_a(head, i, &length, &code, &raw1, &raw2, &unavailable, &start,
                                                  &end, &error) != DW_DLV_OK || unavailable)
                continue;
            if (code == DW_RLE_offset_pair || code == DW_RLE_start_end || code == DW_RLE_start_length ||
                code == DW_RLE_startx_endx || code == DW_RLE_startx_length)
                report(w, start, end, inlined);
        }
        dwarf_dealloc_rnglists_head(head);
    }
    dwarf_dealloc(w->dbg, attr, DW_DLA_ATTR);
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

/* Open `path`'s DWARF, or say why not. */
static bool open_dwarf(const char *path, int *fd, Dwarf_Debug *dbg, char *err, size_t errlen)
{
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0) {
        snprintf(err, errlen, "cannot open %s", path);
        return false;
    }
    Dwarf_Error error = NULL;
    int rc = dwarf_init_b(*fd, DW_DLC_READ, DW_GROUPNUMBER_ANY, NULL, NULL, dbg, &error);
    if (rc != DW_DLV_OK) {
        snprintf(err, errlen, "%s has no DWARF debug information", path);
        if (rc == DW_DLV_ERROR)
            dwarf_dealloc(NULL, error, DW_DLA_ERROR);
        close(*fd);
        return false;
    }
    return true;
}

/* The next compilation unit's DIE, or false at the end. */
static bool next_cu(Dwarf_Debug dbg, Dwarf_Die *cu)
{
    Dwarf_Unsigned length, type_offset, next;
    Dwarf_Half version, address_size, offset_size, extension_size, cu_type;
    Dwarf_Off abbrev;
    Dwarf_Sig8 signature;
    Dwarf_Error error = NULL;
    for (;;) {
        if (dwarf_next_cu_header_d(dbg, 1, &length, &version, &abbrev, &address_size, &offset_size, &extension_size,
                                   &signature, &type_offset, &next, &cu_type, &error) != DW_DLV_OK)
            return false;
        if (dwarf_siblingof_b(dbg, NULL, 1, cu, &error) == DW_DLV_OK)
            return true;
    }
}

int elf_variable_address(const char *path, const char *name, uint64_t *address, char *err, size_t errlen)
{
    int fd;
    struct walk w = { .name = name };
    if (!open_dwarf(path, &fd, &w.dbg, err, errlen))
        return -1;
    bool found = false;
    Dwarf_Die cu;
    while (!found && next_cu(w.dbg, &cu)) {
        find_variable(&w, cu, 0, address, &found);
        dwarf_dealloc(w.dbg, cu, DW_DLA_DIE);
    }
    Dwarf_Error error = NULL;
    dwarf_finish(w.dbg, &error);
    close(fd);
    if (!found)
        snprintf(err, errlen, "no DWARF variable %s with a static address in %s", name, path);
    return found ? 0 : -1;
}

int elf_function_spans(const char *path, const char *name, elf_span_fn *each, void *ctx, char *err, size_t errlen)
{
    int fd;
    struct walk w = { .name = name, .each = each, .ctx = ctx };
    if (!open_dwarf(path, &fd, &w.dbg, err, errlen))
        return -1;
    Dwarf_Die cu;
    while (!w.stop && next_cu(w.dbg, &cu)) {
        walk_children(&w, cu, 0);
        dwarf_dealloc(w.dbg, cu, DW_DLA_DIE);
    }
    Dwarf_Error error = NULL;
    dwarf_finish(w.dbg, &error);
    close(fd);
    return 0;
}
