/* memprof-jit.so: GDB's reader for the code memprof generates in a process.
 *
 *   (gdb) jit-reader-load /path/to/memprof-jit.so     (memprof.gdbinit does it)
 *
 * It names every stub ("memprof entry stub for pool_alloc", ...) and unwinds
 * through it from the frame ranges the symfile gives for each of its
 * instructions, so `bt`, `up`, `finish` and `info frame` are right inside a
 * hook. GDB 13 crashes on a NULL block name, a symtab without blocks and
 * reg_get of a register it does not map (fs_base): none is ever asked for.
 * Per-thread data (the shadow stacks of return addresses) is found from the
 * stack address, through a list the symfile points at, never from TLS.
 *
 * GDB runs a JIT unwinder first for every frame of every thread: a pc
 * outside every region is refused at once. */
#include "symfile.h"
#include <gdb/jit-reader.h>
#include <stdlib.h>
#include <string.h>

GDB_DECLARE_GPL_COMPATIBLE_READER

#define DWARF_RBX 3
#define DWARF_RBP 6
#define DWARF_RSP 7
#define DWARF_R12 12
#define DWARF_R15 15
#define DWARF_RIP 16
#define MAX_THREADS 65536     /* shadow stacks walked, at most */

/* The regions read so far, sorted by start; a region registered again
 * (it grew) replaces its old symfile. */
static struct symfile *regions;
static size_t region_count;
static uint64_t lowest, highest;   /* the span of all regions */

static void update_span(void)
{
    lowest = region_count ? regions[0].header.code_start : 0;
    highest = region_count ? regions[region_count - 1].header.code_start +
                                 regions[region_count - 1].header.code_size
                           : 0;
}

static void keep_region(const struct symfile *s)
{
    size_t at = 0;
    while (at < region_count && regions[at].header.code_start < s->header.code_start)
        at++;
    if (at < region_count && regions[at].header.code_start == s->header.code_start) {
        symfile_free(&regions[at]);
        regions[at] = *s;
    } else {
        struct symfile *grown = realloc(regions, (region_count + 1) * sizeof *regions);
        if (!grown) {
            struct symfile drop = *s;
            symfile_free(&drop);
            return;
        }
        regions = grown;
        memmove(&regions[at + 1], &regions[at], (region_count - at) * sizeof *regions);
        regions[at] = *s;
        region_count++;
    }
    update_span();
}

static const struct symfile *region_at(uint64_t pc)
{
    if (pc < lowest || pc >= highest)
        return NULL;
    for (size_t i = 0; i < region_count; i++) {
        const struct jit_symfile_header *h = &regions[i].header;
        if (pc >= h->code_start && pc - h->code_start < h->code_size)
            return &regions[i];
    }
    return NULL;
}

static enum gdb_status read_symfile(struct gdb_reader_funcs *self, struct gdb_symbol_callbacks *cb, void *memory,
                                    long memory_size)
{
    (void)self;
    struct symfile s;
    char why[160];
    if (memory_size <= 0 || !symfile_parse(memory, (size_t)memory_size, &s, why, sizeof why))
        return GDB_FAIL;   /* another JIT's, or damaged: GDB tries its other readers */
    struct gdb_object *object = cb->object_open(cb);
    struct gdb_symtab *symtab = cb->symtab_open(cb, object, "memprof trampolines");
    for (uint32_t i = 0; i < s.header.stub_count; i++) {
        const struct jit_symfile_stub *stub = &s.stubs[i];
        cb->block_open(cb, symtab, NULL, stub->start, stub->start + stub->size, &s.strings[stub->name]);
    }
    cb->symtab_close(cb, symtab);
    cb->object_close(cb, object);
    keep_region(&s);
    return GDB_SUCCESS;
}

static void free_value(struct gdb_reg_value *v)
{
    free(v);
}

static bool get_reg(struct gdb_unwind_callbacks *cb, int regnum, uint64_t *out)
{
    struct gdb_reg_value *v = cb->reg_get(cb, regnum);
    if (!v)
        return false;
    bool ok = v->defined && v->size >= 8;
    if (ok)
        memcpy(out, v->value, 8);
    v->free(v);
    return ok;
}

static void set_reg(struct gdb_unwind_callbacks *cb, int regnum, uint64_t value)
{
    struct gdb_reg_value *v = malloc(sizeof *v + 8);
    if (!v)
        return;
    v->size = 8;
    v->defined = 1;
    v->free = free_value;
    memcpy(v->value, &value, 8);
    cb->reg_set(cb, regnum, v);
}

static bool read_u64(struct gdb_unwind_callbacks *cb, uint64_t addr, uint64_t *out)
{
    return cb->target_read(addr, out, 8) == GDB_SUCCESS;
}

/* The region is still memprof's in this process: it starts with the magic
 * and the cookie the symfile names. */
static bool region_alive(struct gdb_unwind_callbacks *cb, const struct symfile *s)
{
    unsigned char head[16];
    return cb->target_read(s->header.code_start, head, sizeof head) == GDB_SUCCESS &&
           memcmp(head, "memprofP", 8) == 0 && memcmp(head + 8, &s->header.region_cookie, 8) == 0;
}

/* The return address a full stub kept for the call whose return address
 * was at `slot`: the shadow stack frame with that slot, in any thread. */
static bool shadow_return_address(struct gdb_unwind_callbacks *cb, const struct jit_symfile_header *h,
                                  uint64_t slot, uint64_t *out)
{
    uint64_t stack;
    if (!h->shadow_list || !read_u64(cb, h->shadow_list, &stack))
        return false;
    for (int threads = 0; stack && threads < MAX_THREADS; threads++) {
        uint64_t depth, next;
        if (!read_u64(cb, stack + h->shadow_depth, &depth) || !read_u64(cb, stack + h->shadow_next, &next))
            return false;
        if (depth > h->shadow_capacity)
            depth = h->shadow_capacity;
        for (uint64_t i = depth; i-- > 0;) {   /* the newest first */
            uint64_t frame = stack + h->shadow_frames + i * h->shadow_frame_size, at;
            if (!read_u64(cb, frame + h->shadow_slot, &at))
                return false;
            if (at == slot)
                return read_u64(cb, frame + h->shadow_return_to, out);
        }
        stack = next;
    }
    return false;
}

/* The frame of the stub at `pc`: its CFA, and where it returns to. */
struct stub_frame {
    const struct symfile *region;
    const struct jit_symfile_stub *stub;
    const struct jit_symfile_range *range;
    uint64_t cfa;
};

static bool find_frame(struct gdb_unwind_callbacks *cb, struct stub_frame *f)
{
    uint64_t pc, base;
    if (!get_reg(cb, DWARF_RIP, &pc) || !(f->region = region_at(pc)) ||
        !(f->stub = symfile_stub_at(f->region, pc)) || !(f->range = symfile_range_at(f->region, f->stub, pc)) ||
        !region_alive(cb, f->region) || !get_reg(cb, f->range->cfa_reg, &base))
        return false;
    f->cfa = base + (uint64_t)(int64_t)f->range->cfa_offset;
    return true;
}

static bool return_address(struct gdb_unwind_callbacks *cb, const struct stub_frame *f, uint64_t *ra)
{
    uint64_t slot = f->cfa - 8;
    if (!read_u64(cb, slot, ra))
        return false;
    if (f->range->ra_rule == JIT_RA_RESUME) {
        *ra = f->stub->resume;
        return true;
    }
    if (f->range->ra_rule == JIT_RA_AT_CFA)
        return true;
    /* JIT_RA_SLOT_OR_SHADOW: put back in the slot, or still on a shadow stack. */
    if (*ra != 0 && (*ra < f->stub->start || *ra - f->stub->start >= f->stub->size))
        return true;
    return shadow_return_address(cb, &f->region->header, slot, ra);
}

static enum gdb_status unwind_frame(struct gdb_reader_funcs *self, struct gdb_unwind_callbacks *cb)
{
    (void)self;
    struct stub_frame f;
    uint64_t ra, rbp, value;
    if (!find_frame(cb, &f) || !return_address(cb, &f, &ra))
        return GDB_FAIL;
    if (f.range->rbp_rule == JIT_RBP_AT_CFA) {
        if (!read_u64(cb, f.cfa + (uint64_t)(int64_t)f.range->rbp_offset, &rbp))
            return GDB_FAIL;
    } else if (!get_reg(cb, DWARF_RBP, &rbp)) {
        return GDB_FAIL;
    }
    set_reg(cb, DWARF_RIP, ra);
    set_reg(cb, DWARF_RSP, f.cfa);
    set_reg(cb, DWARF_RBP, rbp);
    /* Callee-saved registers a stub never changes: passed through, or GDB
     * shows them as <not saved> in the caller. */
    if (get_reg(cb, DWARF_RBX, &value))
        set_reg(cb, DWARF_RBX, value);
    for (int r = DWARF_R12; r <= DWARF_R15; r++)
        if (get_reg(cb, r, &value))
            set_reg(cb, r, value);
    return GDB_SUCCESS;
}

static struct gdb_frame_id frame_id(struct gdb_reader_funcs *self, struct gdb_unwind_callbacks *cb)
{
    (void)self;
    struct stub_frame f;
    struct gdb_frame_id id = { 0, 0 };
    if (find_frame(cb, &f)) {
        id.code_address = f.stub->start;
        id.stack_address = f.cfa;
    }
    return id;
}

static void destroy(struct gdb_reader_funcs *self)
{
    (void)self;
    for (size_t i = 0; i < region_count; i++)
        symfile_free(&regions[i]);
    free(regions);
    regions = NULL;
    region_count = 0;
    update_span();
}

static struct gdb_reader_funcs reader = {
    .reader_version = GDB_READER_INTERFACE_VERSION,
    .priv_data = NULL,
    .read = read_symfile,
    .unwind = unwind_frame,
    .get_frame_id = frame_id,
    .destroy = destroy,
};

__attribute__((visibility("default"))) struct gdb_reader_funcs *gdb_init_reader(void)
{
    return &reader;
}
