/* Every copy of a function and a parameter's place at its entry (see
 * inline_entries.h). */
#include "inline_entries.h"
#include "dwarf_walk.h"
#include <dwarf.h>
#include <libdwarf.h>
#include <stdio.h>
#include <string.h>

struct walk {
    Dwarf_Debug dbg;
    const char *function, *parameter;
    elf_inline_fn *each;
    void *ctx;
    uint64_t cu_base;
    Dwarf_Die cu;
    /* The unit's line table, read once when a copy first needs it. */
    Dwarf_Line_Context line_context;
    Dwarf_Line *lines;
    Dwarf_Signed line_count;
    bool lines_read;
};

/* The current unit's line-table rows (none when it has no table). */
static Dwarf_Signed unit_lines(struct walk *w, Dwarf_Line **lines)
{
    if (!w->lines_read) {
        Dwarf_Error error = NULL;
        Dwarf_Unsigned version;
        Dwarf_Small tables;
        w->lines_read = true;
        if (dwarf_srclines_b(w->cu, &version, &tables, &w->line_context, &error) != DW_DLV_OK)
            w->line_context = NULL;
        else if (dwarf_srclines_from_linecontext(w->line_context, &w->lines, &w->line_count, &error) != DW_DLV_OK)
            w->line_count = 0;
    }
    *lines = w->lines;
    return w->line_context ? w->line_count : 0;
}

static void unit_lines_free(struct walk *w)
{
    if (w->line_context)
        dwarf_srclines_dealloc_b(w->line_context);
    w->line_context = NULL;
    w->lines = NULL;
    w->line_count = 0;
    w->lines_read = false;
}

static void lowest(void *ctx, uint64_t start, uint64_t end)
{
    uint64_t *low = ctx;
    (void)end;
    if (start < *low)
        *low = start;
}

/* DW_AT_entry_pc (an address, or in DWARF 5 an offset from the low pc),
 * else DW_AT_low_pc, else the lowest start of the ranges; 0 when none. */
static uint64_t entry_of(struct walk *w, Dwarf_Die die)
{
    Dwarf_Error error = NULL;
    Dwarf_Addr low = 0;
    bool has_low = dwarf_lowpc(die, &low, &error) == DW_DLV_OK;
    uint64_t lowest_start = UINT64_MAX;
    if (!has_low && dwarf_walk_ranges(w->dbg, die, w->cu_base, lowest, &lowest_start))
        low = lowest_start, has_low = true;
    Dwarf_Attribute attr;
    if (dwarf_attr(die, DW_AT_entry_pc, &attr, &error) == DW_DLV_OK) {
        Dwarf_Half form;
        Dwarf_Addr addr;
        Dwarf_Unsigned offset;
        uint64_t entry = 0;
        if (dwarf_whatform(attr, &form, &error) == DW_DLV_OK) {
            if (form == DW_FORM_addr && dwarf_formaddr(attr, &addr, &error) == DW_DLV_OK)
                entry = addr;
            else if (dwarf_formudata(attr, &offset, &error) == DW_DLV_OK && has_low)
                entry = low + offset;
        }
        dwarf_dealloc(w->dbg, attr, DW_DLA_ATTR);
        if (entry)
            return entry;
    }
    return has_low ? low : 0;
}

/* How an operation memprof computes moves the stack: pops, then pushes;
 * false for one it does not compute. */
static bool computed_op(uint8_t atom, uint64_t operand, unsigned *pops, unsigned *pushes)
{
    *pops = 0, *pushes = 1;
    if ((atom >= DW_OP_lit0 && atom <= DW_OP_lit31) || (atom >= DW_OP_breg0 && atom <= DW_OP_breg15) ||
        (atom >= DW_OP_const1u && atom <= DW_OP_consts) || atom == DW_OP_bregx)
        return atom != DW_OP_bregx || operand < 16;
    switch (atom) {
    case DW_OP_dup:
        *pops = 1, *pushes = 2;
        return true;
    case DW_OP_over:
        *pops = 2, *pushes = 3;
        return true;
    case DW_OP_pick:
        *pops = (unsigned)operand + 1, *pushes = *pops + 1;
        return operand < INLINE_EXPRESSION_DEPTH;
    case DW_OP_swap:
        *pops = 2, *pushes = 2;
        return true;
    case DW_OP_drop:
        *pops = 1, *pushes = 0;
        return true;
    case DW_OP_plus: case DW_OP_minus: case DW_OP_mul: case DW_OP_and: case DW_OP_or: case DW_OP_xor:
    case DW_OP_shl: case DW_OP_shr: case DW_OP_shra:
        *pops = 2;
        return true;
    case DW_OP_plus_uconst: case DW_OP_neg: case DW_OP_not: case DW_OP_deref:
        *pops = 1;
        return true;
    }
    return false;
}

/* An expression memprof computes in a stub: every operation one it knows,
 * the stack within bounds, one value left; DW_OP_stack_value only last. */
static bool read_computation(Dwarf_Locdesc_c desc, Dwarf_Unsigned ops, struct inline_entry *e)
{
    Dwarf_Error error = NULL;
    if (ops == 0 || ops > INLINE_EXPRESSION_OPS + 1)
        return false;
    unsigned depth = 0, n = 0;
    bool is_value = false;
    for (Dwarf_Unsigned i = 0; i < ops; i++) {
        Dwarf_Small atom;
        Dwarf_Unsigned op1, op2, op3, raw1, raw2, raw3, branch;
        if (dwarf_get_location_op_value_d(desc, i, &atom, &op1, &op2, &op3, &raw1, &raw2, &raw3, &branch,
                                          &error) != DW_DLV_OK)
            return false;
        if (atom == DW_OP_stack_value && i + 1 == ops) {
            is_value = true;
            break;
        }
        unsigned pops, pushes;
        if (n == INLINE_EXPRESSION_OPS || !computed_op(atom, op1, &pops, &pushes) || pops > depth ||
            depth - pops + pushes > INLINE_EXPRESSION_DEPTH)
            return false;
        depth = depth - pops + pushes;
        e->ops[n++] = (struct place_op){ atom, op1, op2 };
    }
    if (depth != 1)
        return false;
    e->place = PARAM_EXPRESSION, e->op_count = n, e->is_value = is_value;
    return true;
}

/* DW_OP_entry_value's block when it is one DW_OP_regN of a general
 * register (libdwarf gives the block's length and address): its number
 * into e->reg. */
static bool entry_register(Dwarf_Locdesc_c desc, struct inline_entry *e)
{
    Dwarf_Error error = NULL;
    Dwarf_Small atom;
    Dwarf_Unsigned length, block, op3, raw1, raw2, raw3, branch;
    if (dwarf_get_location_op_value_d(desc, 0, &atom, &length, &block, &op3, &raw1, &raw2, &raw3, &branch,
                                      &error) != DW_DLV_OK || length != 1 || !block)
        return false;
    uint8_t op = *(const uint8_t *)(uintptr_t)block;
    if (op < DW_OP_reg0 || op > DW_OP_reg15)
        return false;
    e->reg = op - DW_OP_reg0;
    return true;
}

/* One location expression, in libdwarf's form, as a place. */
static void read_expression(Dwarf_Locdesc_c desc, Dwarf_Unsigned ops, struct inline_entry *e)
{
    Dwarf_Error error = NULL;
    Dwarf_Small atom[3] = { 0 };
    Dwarf_Unsigned op1[3] = { 0 }, op2, op3, raw1, raw2, raw3, branch;
    for (Dwarf_Unsigned i = 0; i < ops && i < 3; i++)
        if (dwarf_get_location_op_value_d(desc, i, &atom[i], &op1[i], &op2, &op3, &raw1, &raw2, &raw3, &branch,
                                          &error) != DW_DLV_OK) {
            snprintf(e->why, sizeof e->why, "a location libdwarf cannot read");
            return;
        }
    if (ops == 1 && atom[0] == DW_OP_call_frame_cfa) {
        e->place = PARAM_CFA;
    } else if (ops == 1 && atom[0] >= DW_OP_reg0 && atom[0] <= DW_OP_reg31) {
        e->place = PARAM_REGISTER, e->reg = atom[0] - DW_OP_reg0;
    } else if (ops == 1 && atom[0] == DW_OP_regx) {
        e->place = PARAM_REGISTER, e->reg = (unsigned)op1[0];
    } else if (ops == 1 && atom[0] >= DW_OP_breg0 && atom[0] <= DW_OP_breg31) {
        e->place = PARAM_REGISTER_MEMORY, e->reg = atom[0] - DW_OP_breg0, e->offset = (int64_t)op1[0];
    } else if (ops == 1 && atom[0] == DW_OP_fbreg) {
        e->place = PARAM_FRAME_MEMORY, e->offset = (int64_t)op1[0];
    } else if (ops == 2 && atom[1] == DW_OP_stack_value && atom[0] >= DW_OP_lit0 && atom[0] <= DW_OP_lit31) {
        e->place = PARAM_CONSTANT, e->value = atom[0] - DW_OP_lit0;
    } else if (ops == 2 && atom[1] == DW_OP_stack_value &&
               (atom[0] == DW_OP_constu || atom[0] == DW_OP_consts || (atom[0] >= DW_OP_const1u && atom[0] <= DW_OP_const8s))) {
        e->place = PARAM_CONSTANT, e->value = op1[0];
    } else if (ops == 2 && atom[1] == DW_OP_stack_value &&
               (atom[0] == DW_OP_entry_value || atom[0] == DW_OP_GNU_entry_value) && entry_register(desc, e)) {
        e->place = PARAM_ENTRY_VALUE;
    } else if (ops >= 1 && atom[0] == DW_OP_GNU_parameter_ref) {
        snprintf(e->why, sizeof e->why, "the function it is in no longer takes it (DW_OP_GNU_parameter_ref: "
                 "GCC dropped the argument its callers passed)");
    } else if (ops == 0) {
        snprintf(e->why, sizeof e->why, "it is optimized out there");
    } else if (!read_computation(desc, ops, e)) {
        const char *name = NULL;
        dwarf_get_OP_name(atom[0], &name);
        snprintf(e->why, sizeof e->why, "its location there is %s%s (%llu operations)", name ? name : "an operation",
                 ops > 1 ? " ..." : "", (unsigned long long)ops);
    }
}

/* The place attribute `name` (DW_AT_location, DW_AT_frame_base) of `die`
 * gives at `pc`: its expression, or its list's entry that covers `pc`.
 * False when the DIE has no such attribute. */
static bool read_place(struct walk *w, Dwarf_Die die, Dwarf_Half name, uint64_t pc, struct inline_entry *e)
{
    Dwarf_Error error = NULL;
    Dwarf_Attribute attr;
    e->place = PARAM_UNREADABLE;
    if (dwarf_attr(die, name, &attr, &error) != DW_DLV_OK)
        return false;
    Dwarf_Loc_Head_c head;
    Dwarf_Unsigned count;
    if (dwarf_get_loclist_c(attr, &head, &count, &error) != DW_DLV_OK) {
        snprintf(e->why, sizeof e->why, "its location cannot be read");
        dwarf_dealloc(w->dbg, attr, DW_DLA_ATTR);
        return true;
    }
    unsigned kind = DW_LKIND_unknown;
    dwarf_get_loclist_head_kind(head, &kind, &error);
    bool covered = false;
    for (Dwarf_Unsigned i = 0; i < count && !covered; i++) {
        Dwarf_Small lle, source;
        Dwarf_Unsigned raw_low, raw_high, ops, expr_offset, desc_offset;
        Dwarf_Bool unavailable = 0;
        Dwarf_Addr low, high;
        Dwarf_Locdesc_c desc;
        if (dwarf_get_locdesc_entry_d(head, i, &lle, &raw_low, &raw_high, &unavailable, &low, &high, &ops, &desc,
                                      &source, &expr_offset, &desc_offset, &error) != DW_DLV_OK || unavailable)
            continue;
        if (kind != DW_LKIND_expression &&
            (lle == DW_LLE_base_address || lle == DW_LLE_base_addressx || lle == DW_LLE_end_of_list))
            continue;   /* not a location: a base for the entries after it */
        /* An expression holds everywhere; a list entry where it says. An
         * empty range at the entry is GCC's location view there (the
         * views at one address share its machine state): it holds too. */
        if (kind != DW_LKIND_expression && !(low <= pc && pc < high) && !(low == pc && high == pc))
            continue;
        covered = true;
        read_expression(desc, ops, e);
        e->holds_low = kind == DW_LKIND_expression ? 0 : low;
        e->holds_high = kind == DW_LKIND_expression ? UINT64_MAX : high;
    }
    if (!covered)
        snprintf(e->why, sizeof e->why, "no entry of its location list covers 0x%llx", (unsigned long long)pc);
    dwarf_loc_head_c_dealloc(head);
    dwarf_dealloc(w->dbg, attr, DW_DLA_ATTR);
    return true;
}

/* The parameter's place at `pc`. */
static void read_location(struct walk *w, Dwarf_Die param, uint64_t pc, struct inline_entry *e)
{
    if (!read_place(w, param, DW_AT_location, pc, e))
        snprintf(e->why, sizeof e->why, "it has no location (optimized out)");
    else if (e->place == PARAM_CFA) {
        e->place = PARAM_UNREADABLE;
        snprintf(e->why, sizeof e->why, "its location is the frame's CFA itself");
    }
}

/* The concrete function's DW_AT_frame_base at the entry, for DW_OP_fbreg:
 * the CFA, %rbp, or a register plus an offset. */
static void read_frame_base(struct walk *w, Dwarf_Die function, struct inline_entry *e)
{
    struct inline_entry base = { .place = PARAM_UNREADABLE };
    read_place(w, function, DW_AT_frame_base, e->entry, &base);
    if (base.place == PARAM_CFA) {
        e->frame_is_cfa = true;
    } else if (base.place == PARAM_REGISTER && base.reg == 6) {
        e->frame_is_rbp = true;   /* set by the prologue: read past it */
    } else if (base.place == PARAM_REGISTER_MEMORY) {
        e->reg = base.reg, e->frame_offset = base.offset;
    } else {
        e->place = PARAM_UNREADABLE;
        snprintf(e->why, sizeof e->why, "it is on the stack from a frame base memprof cannot read");
    }
}

/* The first line-table row after `entry` of another line than its, within
 * [entry, end): where a function's body starts, past its prologue. */
static uint64_t body_after_prologue(struct walk *w, uint64_t entry, uint64_t end)
{
    Dwarf_Error error = NULL;
    Dwarf_Line *lines;
    Dwarf_Signed count = unit_lines(w, &lines);
    uint64_t body = 0;
    Dwarf_Unsigned entry_line = 0;
    bool seen = false;
    for (Dwarf_Signed i = 0; i < count && !body; i++) {
        Dwarf_Addr addr;
        Dwarf_Unsigned line;
        if (dwarf_lineaddr(lines[i], &addr, &error) != DW_DLV_OK || dwarf_lineno(lines[i], &line, &error) != DW_DLV_OK)
            continue;
        if (addr == entry && !seen)
            entry_line = line, seen = true;
        else if (seen && addr > entry && addr < end && line != entry_line)
            body = addr;
    }
    return body;
}

/* The (line, column) of the line-table row that starts at `addr`: false
 * when no row does. */
static bool row_at(Dwarf_Line *lines, Dwarf_Signed count, uint64_t addr, Dwarf_Unsigned *line, Dwarf_Unsigned *column)
{
    Dwarf_Error error = NULL;
    for (Dwarf_Signed i = 0; i < count; i++) {
        Dwarf_Addr at;
        if (dwarf_lineaddr(lines[i], &at, &error) == DW_DLV_OK && at == addr &&
            dwarf_lineno(lines[i], line, &error) == DW_DLV_OK && dwarf_lineoff_b(lines[i], column, &error) == DW_DLV_OK)
            return true;
    }
    return false;
}

/* The starts of an inlined copy's other ranges (not empty, not its entry),
 * at most INLINE_COPY_RANGES, into `starts`, and which start with the row
 * its entry starts with (the loop it is in was unrolled, or its code
 * duplicated, and the one DIE stands for several calls: clang): how many. */
static unsigned further_starts(struct walk *w, const struct inline_entry *e, uint64_t *starts, bool *same_row)
{
    if (e->copy_ranges < 2 || e->copy_ranges > INLINE_COPY_RANGES)
        return 0;
    Dwarf_Line *lines;
    Dwarf_Signed count = unit_lines(w, &lines);
    Dwarf_Unsigned line, column, other_line, other_column;
    bool entry_row = row_at(lines, count, e->entry, &line, &column);
    unsigned n = 0;
    for (unsigned i = 0; i < e->copy_ranges; i++)
        if (e->copy_start[i] != e->entry && e->copy_start[i] < e->copy_end[i]) {
            starts[n] = e->copy_start[i];
            same_row[n++] = entry_row && row_at(lines, count, e->copy_start[i], &other_line, &other_column) &&
                            other_line == line && other_column == column;
        }
    return n;
}

/* A range kept in arrays of `cap`; *n counts them all (more than `cap`:
 * too many to keep). */
static void keep_range(uint64_t *starts, uint64_t *ends, unsigned *n, unsigned cap, uint64_t start, uint64_t end)
{
    if (*n < cap) {
        starts[*n] = start;
        ends[*n] = end;
    }
    (*n)++;
}

static void add_copy_range(void *ctx, uint64_t start, uint64_t end)
{
    struct inline_entry *e = ctx;
    keep_range(e->copy_start, e->copy_end, &e->copy_ranges, INLINE_COPY_RANGES, start, end);
}

static void add_function_range(void *ctx, uint64_t start, uint64_t end)
{
    struct inline_entry *e = ctx;
    keep_range(e->function_start, e->function_end, &e->function_ranges, INLINE_FUNCTION_RANGES, start, end);
}

/* A copy of the function: its entry, and the parameter's place there. */
static bool report_copy(void *ctx, Dwarf_Die copy, Dwarf_Die function, bool inlined)
{
    struct walk *w = ctx;
    struct inline_entry e = { .inlined = inlined, .place = PARAM_UNREADABLE };
    if (!(e.entry = entry_of(w, copy)))
        return false;   /* no code: a declaration */
    Dwarf_Die child, param = NULL;
    Dwarf_Error error = NULL;
    if (dwarf_child(copy, &child, &error) == DW_DLV_OK) {
        for (;;) {
            Dwarf_Half tag;
            if (!param && dwarf_tag(child, &tag, &error) == DW_DLV_OK && tag == DW_TAG_formal_parameter &&
                dwarf_walk_named(w->dbg, child, w->parameter)) {
                param = child;
                read_location(w, child, e.entry, &e);
            }
            Dwarf_Die next;
            int rc = dwarf_siblingof_b(w->dbg, child, 1, &next, &error);
            if (child != param)
                dwarf_dealloc(w->dbg, child, DW_DLA_DIE);
            if (rc != DW_DLV_OK)
                break;
            child = next;
        }
    }
    if (!param)
        snprintf(e.why, sizeof e.why, "this copy has no parameter %s", w->parameter);
    if (e.place == PARAM_FRAME_MEMORY)
        read_frame_base(w, function, &e);
    e.function_entry = entry_of(w, function);
    dwarf_walk_ranges(w->dbg, function, w->cu_base, add_function_range, &e);
    if (inlined)
        dwarf_walk_ranges(w->dbg, copy, w->cu_base, add_copy_range, &e);
    if (e.place == PARAM_FRAME_MEMORY && !inlined)
        for (unsigned i = 0; i < e.function_ranges && i < INLINE_FUNCTION_RANGES; i++)
            if (e.function_start[i] <= e.entry && e.entry < e.function_end[i])
                e.body = body_after_prologue(w, e.entry, e.function_end[i]);
    uint64_t starts[INLINE_COPY_RANGES];
    bool same_row[INLINE_COPY_RANGES];
    unsigned further = inlined ? further_starts(w, &e, starts, same_row) : 0;
    bool stop = w->each(w->ctx, &e) != 0;
    /* Each further start: the parameter's place read there. */
    for (unsigned i = 0; i < further && !stop; i++) {
        struct inline_entry again = { .entry = starts[i], .inlined = true, .further_start_of = e.entry,
                                      .same_row = same_row[i],
                                      .place = PARAM_UNREADABLE, .function_ranges = e.function_ranges,
                                      .copy_ranges = e.copy_ranges, .function_entry = e.function_entry };
        memcpy(again.function_start, e.function_start, sizeof e.function_start);
        memcpy(again.function_end, e.function_end, sizeof e.function_end);
        memcpy(again.copy_start, e.copy_start, sizeof e.copy_start);
        memcpy(again.copy_end, e.copy_end, sizeof e.copy_end);
        if (param)
            read_location(w, param, again.entry, &again);
        else
            snprintf(again.why, sizeof again.why, "this copy has no parameter %s", w->parameter);
        if (again.place == PARAM_FRAME_MEMORY)
            read_frame_base(w, function, &again);
        stop = w->each(w->ctx, &again) != 0;
    }
    if (param)
        dwarf_dealloc(w->dbg, param, DW_DLA_DIE);
    return stop;
}

int elf_inline_entries(const char *path, const char *function, const char *parameter, elf_inline_fn *each,
                       void *ctx, char *err, size_t errlen)
{
    struct walk w = { .function = function, .parameter = parameter, .each = each, .ctx = ctx };
    struct dwarf_file *file = dwarf_walk_open_locations(path, &w.dbg, err, errlen);
    if (!file)
        return -1;
    Dwarf_Die cu;
    bool stop = false;
    while (!stop && dwarf_walk_next_cu(w.dbg, &cu, NULL)) {
        w.cu_base = dwarf_walk_cu_base(cu);
        w.cu = cu;
        stop = dwarf_walk_copies(w.dbg, cu, function, report_copy, &w);
        unit_lines_free(&w);
        dwarf_dealloc(w.dbg, cu, DW_DLA_DIE);
    }
    dwarf_walk_close(file);
    return 0;
}
