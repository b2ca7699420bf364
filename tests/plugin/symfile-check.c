/* The JIT symfile parser (plugin/symfile.c) on the symfiles this process
 * registers for its own stubs, and on damaged copies of them: each damage is
 * refused, with a reason. With a directory argument it also writes the real
 * symfiles there, as seeds for the fuzz test. (TAP) */
#include "hook/intercept.h"
#include "hook/jit.h"
#include "symfile.c"
#include "../tap.h"
#include <stddef.h>
#include <stdio.h>

struct jit_code_entry {
    struct jit_code_entry *next_entry, *prev_entry;
    const char *symfile_addr;
    uint64_t symfile_size;
};
extern struct { uint32_t version, action_flag; struct jit_code_entry *relevant_entry, *first_entry; }
    __jit_debug_descriptor;

static void pre(uint32_t id, struct intercept_regs *regs)
{
    (void)id, (void)regs;
}

static void post(uint32_t id, const struct intercept_return *ret, const uint64_t data[2])
{
    (void)id, (void)ret, (void)data;
}

static unsigned char copy[1 << 16];
static size_t copy_size;

/* The registered symfile, damaged by `damage`; whether it parses. */
static bool parses_after(void (*damage)(struct jit_symfile_header *h, unsigned char *bytes), char *why)
{
    unsigned char damaged[sizeof copy];
    memcpy(damaged, copy, copy_size);
    struct jit_symfile_header h;
    memcpy(&h, damaged, sizeof h);
    damage(&h, damaged);
    memcpy(damaged, &h, sizeof h);
    struct symfile s;
    bool ok = symfile_parse(damaged, copy_size, &s, why, 160);
    if (ok)
        symfile_free(&s);
    return ok;
}

static struct jit_symfile_stub *stub0(struct jit_symfile_header *h, unsigned char *b)
{
    return (struct jit_symfile_stub *)(b + h->header_size);
}

static struct jit_symfile_range *range0(struct jit_symfile_header *h, unsigned char *b)
{
    return (struct jit_symfile_range *)(b + h->header_size + (size_t)h->stub_count * h->stub_size);
}

static void bad_magic(struct jit_symfile_header *h, unsigned char *b) { (void)b; h->magic[0] = 'X'; }
static void bad_version(struct jit_symfile_header *h, unsigned char *b) { (void)b; h->version = 2; }
static void bad_total(struct jit_symfile_header *h, unsigned char *b) { (void)b; h->total_size += 8; }
static void huge_count(struct jit_symfile_header *h, unsigned char *b) { (void)b; h->stub_count = 0x7fffffff; }
static void no_stubs(struct jit_symfile_header *h, unsigned char *b) { (void)b; h->stub_count = 0; }
static void small_records(struct jit_symfile_header *h, unsigned char *b) { (void)b; h->range_size = 4; }
static void stub_outside(struct jit_symfile_header *h, unsigned char *b) { stub0(h, b)->start = h->code_start - 16; }
static void stub_too_long(struct jit_symfile_header *h, unsigned char *b) { stub0(h, b)->size = 0x7fffffff; }
static void bad_name(struct jit_symfile_header *h, unsigned char *b) { stub0(h, b)->name = h->strings_size; }
static void bad_range_index(struct jit_symfile_header *h, unsigned char *b) { stub0(h, b)->first_range = 0xfffffff0; }
static void gap_in_ranges(struct jit_symfile_header *h, unsigned char *b) { range0(h, b)->end -= 1; }
static void bad_cfa_reg(struct jit_symfile_header *h, unsigned char *b) { range0(h, b)->cfa_reg = 58; }
static void bad_rule(struct jit_symfile_header *h, unsigned char *b) { range0(h, b)->ra_rule = 9; }
static void bad_shadow(struct jit_symfile_header *h, unsigned char *b) { (void)b; h->shadow_slot = 4096; }
static void unterminated(struct jit_symfile_header *h, unsigned char *b) { (void)h; b[copy_size - 1] = 'x'; }
static void bad_kind(struct jit_symfile_header *h, unsigned char *b) { stub0(h, b)->kind = 0; }

int main(int argc, char **argv)
{
    struct intercept_stub e, f;
    ok(intercept_entry_stub(1, "target_one", pre, 0, &e) == 0 &&
       intercept_full_stub(2, "target_two", pre, post, 0, &f) == 0, "two stubs made");
    const struct jit_code_entry *entry = __jit_debug_descriptor.first_entry;
    ok(entry && !entry->next_entry && jit_registered_regions() == 1, "one code entry for their region");
    if (!entry || entry->symfile_size > sizeof copy)
        return tap_done();
    copy_size = entry->symfile_size;
    memcpy(copy, entry->symfile_addr, copy_size);
    if (argc > 1) {
        char path[4096];
        snprintf(path, sizeof path, "%s/registered", argv[1]);
        FILE *out = fopen(path, "wb");
        ok(out && fwrite(copy, 1, copy_size, out) == copy_size && fclose(out) == 0, "seed written to %s", path);
    }

    struct symfile s;
    char why[160] = "";
    ok(symfile_parse(copy, copy_size, &s, why, sizeof why), "the registered symfile parses (%s)", why);
    ok(s.header.stub_count == 3, "it lists 3 stubs: entry, return, full entry (%u)", s.header.stub_count);
    const struct jit_symfile_stub *one = symfile_stub_at(&s, e.entry);
    ok(one && one->kind == JIT_STUB_ENTRY && strcmp(&s.strings[one->name], "memprof entry stub for target_one") == 0,
       "the entry stub is found by its address, with its name");
    const struct jit_symfile_stub *ret = symfile_stub_at(&s, f.return_stub);
    ok(ret && ret->kind == JIT_STUB_RETURN && strcmp(&s.strings[ret->name], "memprof return stub for target_two") == 0,
       "the return stub too");
    const struct jit_symfile_range *first = one ? symfile_range_at(&s, one, e.entry) : NULL;
    ok(first && first->cfa_reg == JIT_DWARF_RSP && first->cfa_offset == 8 && first->ra_rule == JIT_RA_AT_CFA,
       "at its first instruction the CFA is rsp + 8, the return address at CFA - 8");
    ok(symfile_stub_at(&s, s.header.code_start) == NULL && symfile_stub_at(&s, 0) == NULL,
       "the region's header and foreign addresses are no stub");
    ok(s.header.shadow_list != 0 && s.header.shadow_frame_size >= 16, "the shadow stacks are described");
    symfile_free(&s);

    static const struct { const char *what; void (*damage)(struct jit_symfile_header *, unsigned char *); } cases[] = {
        { "a foreign magic", bad_magic },
        { "an unknown version", bad_version },
        { "a total size that does not match", bad_total },
        { "a stub count past the data", huge_count },
        { "no stubs (GDB would crash on an empty symtab)", no_stubs },
        { "records shorter than version 1's", small_records },
        { "a stub outside the region", stub_outside },
        { "a stub longer than the region", stub_too_long },
        { "a name offset past the names", bad_name },
        { "a range index past the ranges", bad_range_index },
        { "ranges that leave a gap", gap_in_ranges },
        { "a CFA register that is not rsp or rbp", bad_cfa_reg },
        { "an unknown return address rule", bad_rule },
        { "a shadow frame layout past the frame", bad_shadow },
        { "names not NUL-terminated", unterminated },
        { "an unknown stub kind", bad_kind },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        why[0] = '\0';
        ok(!parses_after(cases[i].damage, why) && why[0], "refused: %s (%s)", cases[i].what, why);
    }
    ok(!symfile_parse(copy, 10, &s, why, sizeof why), "refused: a truncated symfile (%s)", why);
    ok(!symfile_parse(NULL, 0, &s, why, sizeof why), "refused: nothing at all");
    return tap_done();
}
