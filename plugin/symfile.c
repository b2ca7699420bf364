/* Checking a symfile (see symfile.h). GDB hands the reader a copy of
 * whatever any JIT in the process registered: every size, count, offset and
 * index is checked before it is used, in 64-bit arithmetic that cannot
 * overflow, and anything unexpected is refused with a reason. */
#include "symfile.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Limits a real symfile is far below (a region is 64 KiB of code). */
#define MAX_STUBS 65536
#define MAX_RANGES_PER_STUB 64
#define MAX_FRAME_OFFSET 65536
#define MAX_SHADOW_FRAMES (1u << 20)

static bool refuse(char *why, size_t why_size, const char *format, ...)
{
    if (why_size) {
        va_list ap;
        va_start(ap, format);
        vsnprintf(why, why_size, format, ap);
        va_end(ap);
    }
    return false;
}

static bool check_shadow_layout(const struct jit_symfile_header *h, char *why, size_t why_size)
{
    if (h->shadow_list == 0)
        return true;
    if (h->shadow_capacity == 0 || h->shadow_capacity > MAX_SHADOW_FRAMES)
        return refuse(why, why_size, "bad shadow stack capacity %u", h->shadow_capacity);
    if (h->shadow_frame_size < 16 || h->shadow_frame_size > 4096 ||
        (uint64_t)h->shadow_slot + 8 > h->shadow_frame_size ||
        (uint64_t)h->shadow_return_to + 8 > h->shadow_frame_size)
        return refuse(why, why_size, "bad shadow frame layout");
    if (h->shadow_next > 4096 || h->shadow_depth > 4096 || h->shadow_frames > 4096)
        return refuse(why, why_size, "bad shadow stack layout");
    return true;
}

static bool check_ranges(const struct symfile *s, const struct jit_symfile_stub *stub, size_t index, char *why,
                         size_t why_size)
{
    if (stub->range_count == 0 || stub->range_count > MAX_RANGES_PER_STUB ||
        (uint64_t)stub->first_range + stub->range_count > s->header.range_count)
        return refuse(why, why_size, "stub %zu: bad frame ranges", index);
    uint32_t expect = 0;
    for (uint32_t i = 0; i < stub->range_count; i++) {
        const struct jit_symfile_range *r = &s->ranges[stub->first_range + i];
        if (r->start != expect || r->end <= r->start || r->end > stub->size)
            return refuse(why, why_size, "stub %zu: frame range %u does not follow the previous one", index, i);
        if (r->cfa_reg != JIT_DWARF_RSP && r->cfa_reg != JIT_DWARF_RBP)
            return refuse(why, why_size, "stub %zu: frame range %u: bad CFA register %u", index, i, r->cfa_reg);
        if (r->ra_rule != JIT_RA_AT_CFA && r->ra_rule != JIT_RA_SLOT_OR_SHADOW && r->ra_rule != JIT_RA_RESUME)
            return refuse(why, why_size, "stub %zu: frame range %u: bad return address rule", index, i);
        if (r->rbp_rule != JIT_RBP_SAME && r->rbp_rule != JIT_RBP_AT_CFA)
            return refuse(why, why_size, "stub %zu: frame range %u: bad rbp rule", index, i);
        if (r->cfa_offset < -MAX_FRAME_OFFSET || r->cfa_offset > MAX_FRAME_OFFSET ||
            r->rbp_offset < -MAX_FRAME_OFFSET || r->rbp_offset > MAX_FRAME_OFFSET)
            return refuse(why, why_size, "stub %zu: frame range %u: offset out of bounds", index, i);
        expect = r->end;
    }
    if (expect != stub->size)
        return refuse(why, why_size, "stub %zu: frame ranges end before the stub", index);
    return true;
}

static bool check_stubs(const struct symfile *s, char *why, size_t why_size)
{
    const struct jit_symfile_header *h = &s->header;
    uint64_t code_end = h->code_start + h->code_size, prev_end = h->code_start;
    for (size_t i = 0; i < h->stub_count; i++) {
        const struct jit_symfile_stub *stub = &s->stubs[i];
        if (stub->size == 0 || stub->start < prev_end || stub->start > code_end ||
            stub->size > code_end - stub->start)
            return refuse(why, why_size, "stub %zu: outside the region or overlapping the previous one", i);
        if (stub->name >= h->strings_size || s->strings[stub->name] == '\0')
            return refuse(why, why_size, "stub %zu: bad name", i);
        if (stub->kind < JIT_STUB_ENTRY || stub->kind > JIT_STUB_STORE)
            return refuse(why, why_size, "stub %zu: unknown kind %u", i, stub->kind);
        if (!check_ranges(s, stub, i, why, why_size))
            return false;
        prev_end = stub->start + stub->size;
    }
    return true;
}

/* Copy `count` records of `size` bytes (at least `want`) into `want`-byte
 * records: a newer writer may make its records longer. */
static void *copy_records(const unsigned char *from, uint32_t count, uint32_t size, size_t want)
{
    unsigned char *to = calloc(count ? count : 1, want);
    if (to)
        for (uint32_t i = 0; i < count; i++)
            memcpy(to + i * want, from + (size_t)i * size, want);
    return to;
}

bool symfile_parse(const void *data, size_t size, struct symfile *out, char *why, size_t why_size)
{
    memset(out, 0, sizeof *out);
    const unsigned char *bytes = data;
    struct jit_symfile_header h;
    if (!data || size < sizeof h)
        return refuse(why, why_size, "too short for a memprof symfile (%zu bytes)", size);
    memcpy(&h, data, sizeof h);
    if (memcmp(h.magic, JIT_SYMFILE_MAGIC, sizeof h.magic) != 0)
        return refuse(why, why_size, "not a memprof symfile");
    if (h.version != JIT_SYMFILE_VERSION)
        return refuse(why, why_size, "memprof symfile version %u, this reader knows %u", h.version,
                      JIT_SYMFILE_VERSION);
    if (h.header_size < sizeof h || h.header_size > size || h.total_size != size)
        return refuse(why, why_size, "sizes do not match the symfile's (%zu bytes)", size);
    if (h.stub_size < sizeof(struct jit_symfile_stub) || h.stub_size > 4096 ||
        h.range_size < sizeof(struct jit_symfile_range) || h.range_size > 4096)
        return refuse(why, why_size, "bad record sizes");
    /* GDB 13 crashes on a symtab without blocks: a symfile has stubs. */
    if (h.stub_count == 0 || h.stub_count > MAX_STUBS || h.range_count == 0 ||
        h.range_count > (uint64_t)MAX_STUBS * MAX_RANGES_PER_STUB)
        return refuse(why, why_size, "bad counts (%u stubs, %u ranges)", h.stub_count, h.range_count);
    uint64_t stubs_at = h.header_size, ranges_at = stubs_at + (uint64_t)h.stub_count * h.stub_size,
             strings_at = ranges_at + (uint64_t)h.range_count * h.range_size;
    if (strings_at > size || strings_at + h.strings_size != size)
        return refuse(why, why_size, "the parts do not add up to the symfile's size");
    if (h.strings_size == 0 || bytes[size - 1] != '\0')
        return refuse(why, why_size, "the names do not end with a NUL");
    if (h.code_size == 0 || h.code_start + h.code_size < h.code_start)
        return refuse(why, why_size, "bad code range");
    if (!check_shadow_layout(&h, why, why_size))
        return false;
    out->header = h;
    out->stubs = copy_records(bytes + stubs_at, h.stub_count, h.stub_size, sizeof *out->stubs);
    out->ranges = copy_records(bytes + ranges_at, h.range_count, h.range_size, sizeof *out->ranges);
    out->strings = malloc(h.strings_size);
    if (!out->stubs || !out->ranges || !out->strings) {
        symfile_free(out);
        return refuse(why, why_size, "out of memory");
    }
    memcpy(out->strings, bytes + strings_at, h.strings_size);
    if (!check_stubs(out, why, why_size)) {
        symfile_free(out);
        return false;
    }
    return true;
}

void symfile_free(struct symfile *s)
{
    free(s->stubs);
    free(s->ranges);
    free(s->strings);
    memset(s, 0, sizeof *s);
}

const struct jit_symfile_stub *symfile_stub_at(const struct symfile *s, uint64_t pc)
{
    size_t lo = 0, hi = s->header.stub_count;
    while (lo < hi) {   /* the first stub starting after pc */
        size_t mid = lo + (hi - lo) / 2;
        if (s->stubs[mid].start <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    const struct jit_symfile_stub *stub = &s->stubs[lo - 1];
    return pc - stub->start < stub->size ? stub : NULL;
}

const struct jit_symfile_range *symfile_range_at(const struct symfile *s, const struct jit_symfile_stub *stub,
                                                 uint64_t pc)
{
    uint64_t offset = pc - stub->start;
    for (uint32_t i = 0; i < stub->range_count; i++) {
        const struct jit_symfile_range *r = &s->ranges[stub->first_range + i];
        if (offset >= r->start && offset < r->end)
            return r;
    }
    return NULL;
}
