/* The call frame information of the object holding a pc (DWARF 5 §6.4, and
 * the LSB's .eh_frame and .eh_frame_hdr): the FDE found by binary search in
 * .eh_frame_hdr's table, its CIE's and its own instructions run up to the
 * pc, for the CFA and the rules of %rbp and the return address. */
#include "cfi.h"
#include "../arch/cpu.h"
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

/* DWARF register numbers: the frame pointer (%rbp on x86-64), the stack
 * pointer, the return address's column. */
#define DWARF_FP CPU_DWARF_FP
#define DWARF_SP CPU_DWARF_SP
#define DWARF_RA CPU_DWARF_RA

_Static_assert(sizeof(struct cfi_rule) == 8, "a rule is a word of the unwinder's cache entry");

/* Pointer encodings (DW_EH_PE_*). */
#define PE_OMIT 0xff
#define PE_FORMAT 0x0f
#define PE_ABSPTR 0x00
#define PE_ULEB128 0x01
#define PE_UDATA2 0x02
#define PE_UDATA4 0x03
#define PE_UDATA8 0x04
#define PE_SLEB128 0x09
#define PE_SDATA2 0x0a
#define PE_SDATA4 0x0b
#define PE_SDATA8 0x0c
#define PE_APPLICATION 0x70
#define PE_PCREL 0x10
#define PE_DATAREL 0x30

/* The CFA instructions (DW_CFA_*) this reader follows. */
enum {
    CFA_ADVANCE_LOC = 0x40, CFA_OFFSET = 0x80, CFA_RESTORE = 0xc0,   /* with an operand in the low 6 bits */
    CFA_NOP = 0x00, CFA_ADVANCE_LOC1 = 0x02, CFA_ADVANCE_LOC2 = 0x03, CFA_ADVANCE_LOC4 = 0x04,
    CFA_OFFSET_EXTENDED = 0x05, CFA_RESTORE_EXTENDED = 0x06, CFA_UNDEFINED = 0x07, CFA_SAME_VALUE = 0x08,
    CFA_REGISTER = 0x09, CFA_REMEMBER_STATE = 0x0a, CFA_RESTORE_STATE = 0x0b, CFA_DEF_CFA = 0x0c,
    CFA_DEF_CFA_REGISTER = 0x0d, CFA_DEF_CFA_OFFSET = 0x0e, CFA_DEF_CFA_EXPRESSION = 0x0f, CFA_EXPRESSION = 0x10,
    CFA_OFFSET_EXTENDED_SF = 0x11, CFA_DEF_CFA_SF = 0x12, CFA_DEF_CFA_OFFSET_SF = 0x13, CFA_VAL_OFFSET = 0x14,
    CFA_VAL_OFFSET_SF = 0x15, CFA_VAL_EXPRESSION = 0x16, CFA_GNU_ARGS_SIZE = 0x2e,
    CFA_GNU_NEGATIVE_OFFSET_EXTENDED = 0x2f,
};

/* A cursor over bytes that stops, and says so, at the end. */
struct reader {
    const uint8_t *at, *end;
    bool bad;
};

static uint64_t read_fixed(struct reader *r, size_t n)
{
    uint64_t v = 0;
    if ((size_t)(r->end - r->at) < n) {
        r->bad = true;
        return 0;
    }
    memcpy(&v, r->at, n);   /* little-endian */
    r->at += n;
    return v;
}

static uint64_t read_uleb(struct reader *r)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (r->at >= r->end)
            break;
        uint8_t b = *r->at++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    r->bad = true;
    return 0;
}

static int64_t read_sleb(struct reader *r)
{
    int64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (r->at >= r->end)
            break;
        uint8_t b = *r->at++;
        v |= (int64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return shift + 7 < 64 && (b & 0x40) ? v | -((int64_t)1 << (shift + 7)) : v;
    }
    r->bad = true;
    return 0;
}

/* An encoded pointer; `data` is the base of DW_EH_PE_datarel. Indirect
 * pointers (personality routines) are read as their address only. */
static uintptr_t read_encoded(struct reader *r, uint8_t enc, uintptr_t data)
{
    uintptr_t here = (uintptr_t)r->at;
    uint64_t v;
    switch (enc & PE_FORMAT) {
    case PE_ABSPTR: v = read_fixed(r, 8); break;
    case PE_ULEB128: v = read_uleb(r); break;
    case PE_UDATA2: v = read_fixed(r, 2); break;
    case PE_UDATA4: v = read_fixed(r, 4); break;
    case PE_UDATA8: v = read_fixed(r, 8); break;
    case PE_SLEB128: v = (uint64_t)read_sleb(r); break;
    case PE_SDATA2: v = (uint64_t)(int64_t)(int16_t)read_fixed(r, 2); break;
    case PE_SDATA4: v = (uint64_t)(int64_t)(int32_t)read_fixed(r, 4); break;
    case PE_SDATA8: v = read_fixed(r, 8); break;
    default: r->bad = true; return 0;
    }
    switch (enc & PE_APPLICATION) {
    case 0: return (uintptr_t)v;
    case PE_PCREL: return here + (uintptr_t)v;
    case PE_DATAREL: return data + (uintptr_t)v;
    default: r->bad = true; return 0;
    }
}

/* What one CFI entry (CIE or FDE) holds: its bytes after the length. */
static bool entry_at(const uint8_t *p, struct reader *body)
{
    uint32_t length;
    memcpy(&length, p, 4);
    if (length == 0 || length == 0xffffffffu || length > (1u << 24))
        return false;   /* a terminator, 64-bit DWARF, or nonsense */
    *body = (struct reader){ p + 4, p + 4 + length, false };
    return true;
}

struct cie {
    uint64_t code_align;
    int64_t data_align;
    uint8_t fde_encoding;
    bool has_augmentation_data;
    struct reader initial;   /* its instructions */
};

static bool parse_cie(const uint8_t *p, struct cie *c)
{
    struct reader r;
    if (!entry_at(p, &r) || read_fixed(&r, 4) != 0)
        return false;   /* not a CIE (its id is 0 in .eh_frame) */
    uint8_t version = (uint8_t)read_fixed(&r, 1);
    if (version != 1 && version != 3)
        return false;
    const char *aug = (const char *)r.at;
    size_t aug_len = strnlen(aug, (size_t)(r.end - r.at));
    if (aug_len == (size_t)(r.end - r.at))
        return false;
    r.at += aug_len + 1;
    c->code_align = read_uleb(&r);
    c->data_align = read_sleb(&r);
    uint64_t ra = version == 1 ? read_fixed(&r, 1) : read_uleb(&r);
    if (ra != DWARF_RA)
        return false;
    c->fde_encoding = PE_ABSPTR;
    c->has_augmentation_data = aug[0] == 'z';
    if (c->has_augmentation_data) {
        uint64_t len = read_uleb(&r);
        if (r.bad || len > (uint64_t)(r.end - r.at))
            return false;
        struct reader data = { r.at, r.at + len, false };
        for (const char *a = aug + 1; *a; a++) {
            switch (*a) {
            case 'R': c->fde_encoding = (uint8_t)read_fixed(&data, 1); break;
            case 'L': read_fixed(&data, 1); break;
            case 'P': {
                uint8_t enc = (uint8_t)read_fixed(&data, 1);
                read_encoded(&data, enc & 0x7f, 0);
                break;
            }
            case 'S': return false;   /* a signal frame: libunwind's */
            default: return false;
            }
        }
        if (data.bad)
            return false;
        r.at += len;
    } else if (aug[0]) {
        return false;
    }
    c->initial = r;
    return !r.bad;
}

/* The state the instructions build: the CFA and two register rules. */
enum reg_rule { RULE_SAME, RULE_OFFSET, RULE_UNDEFINED, RULE_OTHER };
struct state {
    uint8_t cfa_base;
    int64_t cfa_offset;
    enum reg_rule rbp, ra;
    int64_t rbp_offset, ra_offset;
};

#define STATE_STACK 8

static void set_rule(struct state *s, uint64_t reg, enum reg_rule rule, int64_t offset)
{
    if (reg == DWARF_FP)
        s->rbp = rule, s->rbp_offset = offset;
    else if (reg == DWARF_RA)
        s->ra = rule, s->ra_offset = offset;
    else if (reg == DWARF_SP && rule != RULE_SAME)
        s->cfa_base = CFI_UNKNOWN;   /* %rsp other than the CFA: not followed */
}

/* Run instructions from `r` while the location stays at or before `pc`.
 * false: an instruction this reader does not follow. */
static bool run(struct reader *r, const struct cie *c, const struct state *initial, uintptr_t *loc, uintptr_t pc,
                struct state *s, struct state *stack, int *depth)
{
    for (int steps = 0; r->at < r->end && !r->bad; steps++) {
        if (steps > 100000)
            return false;
        uint8_t op = (uint8_t)read_fixed(r, 1);
        uint8_t low = op & 0x3f;
        uint64_t reg, delta = 0;
        switch (op & 0xc0) {
        case CFA_ADVANCE_LOC: delta = low * c->code_align; goto advance;
        case CFA_OFFSET: set_rule(s, low, RULE_OFFSET, (int64_t)read_uleb(r) * c->data_align); continue;
        case CFA_RESTORE:
            reg = low;
            goto restore;
        }
        switch (op) {
        case CFA_NOP: continue;
        case CFA_ADVANCE_LOC1: delta = read_fixed(r, 1) * c->code_align; goto advance;
        case CFA_ADVANCE_LOC2: delta = read_fixed(r, 2) * c->code_align; goto advance;
        case CFA_ADVANCE_LOC4: delta = read_fixed(r, 4) * c->code_align; goto advance;
        case CFA_OFFSET_EXTENDED:
            reg = read_uleb(r);
            set_rule(s, reg, RULE_OFFSET, (int64_t)read_uleb(r) * c->data_align);
            continue;
        case CFA_OFFSET_EXTENDED_SF:
            reg = read_uleb(r);
            set_rule(s, reg, RULE_OFFSET, read_sleb(r) * c->data_align);
            continue;
        case CFA_GNU_NEGATIVE_OFFSET_EXTENDED:
            reg = read_uleb(r);
            set_rule(s, reg, RULE_OFFSET, -(int64_t)read_uleb(r) * c->data_align);
            continue;
        case CFA_RESTORE_EXTENDED:
            reg = read_uleb(r);
            goto restore;
        case CFA_UNDEFINED: set_rule(s, read_uleb(r), RULE_UNDEFINED, 0); continue;
        case CFA_SAME_VALUE: set_rule(s, read_uleb(r), RULE_SAME, 0); continue;
        case CFA_REGISTER:
            reg = read_uleb(r);
            read_uleb(r);
            set_rule(s, reg, RULE_OTHER, 0);
            continue;
        case CFA_REMEMBER_STATE:
            if (*depth == STATE_STACK)
                return false;
            stack[(*depth)++] = *s;
            continue;
        case CFA_RESTORE_STATE:   /* the whole row, the CFA with it (as GCC's epilogues expect) */
            if (*depth == 0)
                return false;
            *s = stack[--*depth];
            continue;
        case CFA_DEF_CFA:
        case CFA_DEF_CFA_SF:
            reg = read_uleb(r);
            s->cfa_base = reg == DWARF_SP ? CFI_RSP : reg == DWARF_FP ? CFI_RBP : CFI_UNKNOWN;
            s->cfa_offset = op == CFA_DEF_CFA ? (int64_t)read_uleb(r) : read_sleb(r) * c->data_align;
            continue;
        case CFA_DEF_CFA_REGISTER:
            reg = read_uleb(r);
            s->cfa_base = reg == DWARF_SP ? CFI_RSP : reg == DWARF_FP ? CFI_RBP : CFI_UNKNOWN;
            continue;
        case CFA_DEF_CFA_OFFSET: s->cfa_offset = (int64_t)read_uleb(r); continue;
        case CFA_DEF_CFA_OFFSET_SF: s->cfa_offset = read_sleb(r) * c->data_align; continue;
        case CFA_DEF_CFA_EXPRESSION: {
            uint64_t len = read_uleb(r);
            r->at += len <= (uint64_t)(r->end - r->at) ? len : 0;
            s->cfa_base = CFI_UNKNOWN;
            continue;
        }
        case CFA_EXPRESSION:
        case CFA_VAL_EXPRESSION: {
            reg = read_uleb(r);
            uint64_t len = read_uleb(r);
            r->at += len <= (uint64_t)(r->end - r->at) ? len : 0;
            set_rule(s, reg, RULE_OTHER, 0);
            continue;
        }
        case CFA_VAL_OFFSET:
        case CFA_VAL_OFFSET_SF:
            reg = read_uleb(r);
            op == CFA_VAL_OFFSET ? (void)read_uleb(r) : (void)read_sleb(r);
            set_rule(s, reg, RULE_OTHER, 0);
            continue;
        case CFA_GNU_ARGS_SIZE: read_uleb(r); continue;
        default: return false;
        }
    advance:
        if (*loc + delta > pc)
            return true;   /* the rules in force at pc are these */
        *loc += delta;
        continue;
    restore:
        if (reg == DWARF_FP)
            s->rbp = initial->rbp, s->rbp_offset = initial->rbp_offset;
        else if (reg == DWARF_RA)
            s->ra = initial->ra, s->ra_offset = initial->ra_offset;
        continue;
    }
    return !r->bad;
}

/* The FDE covering `pc` from .eh_frame_hdr's sorted table: the entry with
 * the greatest start at or below it. */
static const uint8_t *find_fde(const uint8_t *hdr, uintptr_t pc)
{
    if (hdr[0] != 1 || hdr[3] != (PE_DATAREL | PE_SDATA4))
        return NULL;   /* only the table every linker writes */
    struct reader r = { hdr + 4, hdr + 4 + 16, false };
    read_encoded(&r, hdr[1], (uintptr_t)hdr);   /* eh_frame_ptr */
    uint64_t count = hdr[2] == PE_OMIT ? 0 : read_encoded(&r, hdr[2], (uintptr_t)hdr);
    if (r.bad || !count || count > (1u << 26))
        return NULL;
    const int32_t *table = (const int32_t *)(const void *)r.at;
    size_t lo = 0, hi = count;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)hdr + (intptr_t)table[mid * 2] <= pc)
            lo = mid;
        else
            hi = mid;
    }
    if ((uintptr_t)hdr + (intptr_t)table[lo * 2] > pc)
        return NULL;
    return hdr + table[lo * 2 + 1];
}

/* The FDE covering `pc`: its CIE, the function's start and range, and `r`
 * at the FDE's augmentation data. */
static bool fde_at(uintptr_t pc, struct reader *r, struct cie *c, uintptr_t *start, uintptr_t *range)
{
    struct dl_find_object found;
    if (_dl_find_object((void *)pc, &found) != 0 || !found.dlfo_eh_frame)
        return false;
    const uint8_t *hdr = found.dlfo_eh_frame, *fde = find_fde(hdr, pc);
    if (!fde || !entry_at(fde, r))
        return false;
    const uint8_t *id_at = r->at;
    uint32_t cie_offset = (uint32_t)read_fixed(r, 4);
    if (!cie_offset || !parse_cie(id_at - cie_offset, c))
        return false;
    *start = read_encoded(r, c->fde_encoding, (uintptr_t)hdr);
    *range = read_encoded(r, c->fde_encoding & PE_FORMAT, 0);
    return !r->bad && pc >= *start && pc - *start < *range;   /* not in a gap between functions */
}

bool cfi_function_at(uintptr_t pc, uintptr_t *start, uintptr_t *end)
{
    struct reader r;
    struct cie c;
    uintptr_t range;
    if (!fde_at(pc, &r, &c, start, &range))
        return false;
    *end = *start + range;
    return true;
}

bool cfi_rule_at(uintptr_t pc, struct cfi_rule *rule)
{
    memset(rule, 0, sizeof *rule);
    struct reader r;
    struct cie c;
    uintptr_t start, range;
    if (!fde_at(pc, &r, &c, &start, &range))
        return false;
    if (c.has_augmentation_data) {
        uint64_t len = read_uleb(&r);
        if (r.bad || len > (uint64_t)(r.end - r.at))
            return false;
        r.at += len;
    }

    struct state s = { CFI_UNKNOWN, 0, RULE_SAME, RULE_SAME, 0, 0 }, initial, stack[STATE_STACK];
    int depth = 0;
    uintptr_t loc = start;
    struct reader cie_code = c.initial;
    if (!run(&cie_code, &c, &s, &loc, UINTPTR_MAX, &s, stack, &depth))
        return false;
    initial = s;
    loc = start;
    if (!run(&r, &c, &initial, &loc, pc, &s, stack, &depth))
        return false;
    if (s.cfa_base == CFI_UNKNOWN || s.cfa_offset < 0 || s.cfa_offset >= (1 << 27) || s.rbp == RULE_OTHER ||
        s.rbp == RULE_UNDEFINED || (s.rbp == RULE_OFFSET && (s.rbp_offset < INT16_MIN || s.rbp_offset >= 0)))
        return false;
    if (s.ra == RULE_UNDEFINED) {
        rule->outermost = true;
    } else if (s.ra != RULE_OFFSET || s.ra_offset >= 0 || s.ra_offset < INT16_MIN) {
        /* The return address anywhere but saved below the CFA (x86-64's
         * call put it at CFA-8; AArch64's prologue stores x30 there, and a
         * function that has not, a leaf, keeps it in x30). */
        return false;
    }
    rule->ra_offset = (int16_t)s.ra_offset;
    rule->cfa_base = s.cfa_base;
    rule->cfa_offset = (int)s.cfa_offset;
    rule->rbp_offset = s.rbp == RULE_OFFSET ? (int16_t)s.rbp_offset : 0;
    return true;
}
