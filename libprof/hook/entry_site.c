/* Entry hooks on code that may be inlined (see entry_site.h). A site's
 * stub, near it in a pool:
 *
 *     what stub_keep.h keeps, around
 *     movabs $id, %rdi; the parameter into %rsi, the second into %rdx,
 *       the caller into %rcx; movabs $handler, %rax; call *%rax
 *     the moved instructions             rip-relative operands and branches re-aimed
 *     jmp back                           to the first instruction not moved
 *
 * The parameter is read from the registers as they were at the entry: a
 * caller-saved one from where the stub pushed it, %rbp from its push, %rsp
 * from %rbp, the others where they are. */
#include "entry_site.h"
#include "code_write.h"
#include "entry_value.h"
#include "jit.h"
#include "place_load.h"
#include "pool.h"
#include "stub_frames.h"
#include "stub_keep.h"
#include "../arch/x86_64/emit.h"
#include "../arch/x86_64/flow.h"
#include "../arch/x86_64/relocate.h"
#include "../unwind/cfi.h"
#include "../util/pages.h"
#include <dwarf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#define STUB_MAX 512
#define JMP_REL32_LENGTH 5
#define WINDOW 8
#define MOVED_MAX 32      /* the instructions under a jmp: at most 5 bytes' worth */


static bool readable_place(const struct inline_entry *e, char *why, size_t why_size)
{
    switch (e->place) {
    case PARAM_REGISTER:
    case PARAM_REGISTER_MEMORY:
        if (e->reg < 16)
            return true;
        snprintf(why, why_size, "its parameter is in DWARF register %u, not a general register", e->reg);
        return false;
    case PARAM_CONSTANT:
    case PARAM_EXPRESSION:   /* its registers were checked as it was read */
    case PARAM_ENTRY_VALUE:  /* its register (0-15) too */
        return true;
    case PARAM_FRAME_MEMORY:
        if ((e->frame_is_cfa || e->frame_is_rbp) && e->body)
            return true;   /* hooked past the prologue (entry_sites_prepare) */
        snprintf(why, why_size, "its parameter is in a stack slot%s",
                 e->frame_is_cfa || e->frame_is_rbp
                     ? " the prologue writes, and the function's body was found neither in its line table nor past "
                       "its prologue's spills"
                     : " off a frame base memprof does not read");
        return false;
    case PARAM_CFA:
    case PARAM_UNREADABLE:
        snprintf(why, why_size, "%s", e->why);
        return false;
    }
    return false;
}

static bool add_site(struct entry_patch *p, const struct entry_site *site, uintptr_t window)
{
    if (!pages_grow((void **)&p->sites, &p->bytes, (p->count + 1) * sizeof *p->sites, 4096) ||
        !pages_grow((void **)&p->patches, &p->patch_bytes, (p->count + 1) * sizeof *p->patches, 4096))
        return false;
    p->sites[p->count] = *site;
    p->patches[p->count] = (struct code_patch){ .at = window, .width = WINDOW };
    memcpy(&p->patches[p->count].before, (const void *)window, WINDOW);
    p->count++;
    return true;
}

/* A place in the caller's frame as `rule` says it is at the body: what
 * DWARF puts at the frame base (the CFA, or %rbp itself) plus `offset`. */
static void frame_place(struct inline_entry *w, const struct cfi_rule *rule, int64_t offset)
{
    bool rbp = w->frame_is_rbp;
    w->place = PARAM_REGISTER_MEMORY;
    w->reg = rbp || rule->cfa_base == CFI_RBP ? 6 : 7;   /* DWARF rbp, rsp */
    w->offset = (rbp ? 0 : rule->cfa_offset) + offset;
}

static bool place_holds_at(const struct inline_entry *e, uint64_t pc)
{
    return e->place == PARAM_CONSTANT || (e->holds_low <= pc && pc < e->holds_high);
}

/* The end of the copy's range that holds `pc` (0: none does). */
static uint64_t copy_range_end(const struct inline_entry *e, uint64_t pc)
{
    for (unsigned k = 0; k < e->copy_ranges && k < INLINE_COPY_RANGES; k++)
        if (e->copy_start[k] <= pc && pc < e->copy_end[k])
            return e->copy_end[k];
    return 0;
}

/* The code of the function a copy is in, as ranges to decode (at most
 * INLINE_FUNCTION_RANGES: the callers check). */
static void function_code(const struct inline_entry *e, struct code_range *ranges)
{
    for (unsigned k = 0; k < e->function_ranges && k < INLINE_FUNCTION_RANGES; k++)
        ranges[k] = (struct code_range){ (uintptr_t)e->function_start[k],
                                         (size_t)(e->function_end[k] - e->function_start[k]) };
}

/* An inlined copy's entry past the nops it starts with: with no
 * DW_AT_entry_pc the entry is the copy's lowest address, which clang may
 * make the padding that aligns a loop's head, jumped over, never run. Only
 * within the copy's range, and where the parameters' places still hold. */
static uint64_t past_padding(const struct inline_entry *e, const struct inline_entry *second)
{
    uint64_t end = copy_range_end(e, e->entry), pc = e->entry;
    uint8_t length;
    while (pc < end && (length = decode_nop((const void *)(uintptr_t)pc, end - pc)) != 0)
        pc += length;
    if (pc == e->entry || pc >= end || !place_holds_at(e, pc) || (second && !place_holds_at(second, pc)))
        return e->entry;
    return pc;
}

/* Where the body of a function written on one line starts (its line table
 * has no second line): past what an unoptimized prologue does, the frame
 * set up and the arguments spilled to their slots, as GDB reads the same
 * code when the line table says nothing. 0 when no spill is seen. */
static uint64_t body_past_spills(const struct inline_entry *e)
{
    uint64_t end = 0;
    for (unsigned k = 0; k < e->function_ranges && k < INLINE_FUNCTION_RANGES; k++)
        if (e->function_start[k] <= e->entry && e->entry < e->function_end[k])
            end = e->function_end[k];
    bool spilled = false;
    uint8_t length = 0;
    for (uint64_t pc = e->entry; pc < end; pc += length) {
        enum frame_setup step = decode_frame_setup((const void *)(uintptr_t)pc, end - pc, &length);
        if (step == FRAME_OTHER)
            return spilled ? pc : 0;
        spilled |= step == FRAME_SPILL;
    }
    return 0;
}

/* A further start of a copy (e->further_start_of) is one call of its own only when
 * it begins as the entry does: the same statement's code again, as an
 * unrolled loop has it, not the rest of one statement resumed after other
 * code was scheduled in between (one call passing both starts). */
static bool repeats_entry(const struct inline_entry *e)
{
    uint64_t end = copy_range_end(e, e->entry), first_end = copy_range_end(e, e->further_start_of);
    if (!end || !first_end)
        return false;
    size_t avail = end - e->entry < first_end - e->further_start_of ? end - e->entry : first_end - e->further_start_of;
    return decode_same_operation((const void *)(uintptr_t)e->further_start_of, e->further_start_of,
                                 (const void *)(uintptr_t)e->entry, e->entry, avail < 15 ? avail : 15);
}

/* The further starts of copy i hooked because jumps are threaded into them. */
struct threaded_starts {
    uint64_t copy;
    unsigned count;
    uint64_t starts[INLINE_COPY_RANGES];
};

static bool threaded_wanted(const struct threaded_starts *t, const struct inline_entry *e)
{
    for (unsigned k = 0; k < t->count && e->further_start_of == t->copy; k++)
        if (t->starts[k] == e->entry)
            return true;
    return false;
}

/* GCC's jump threading: code of the copy that a loop runs again and again
 * without passing its entry (the caller branching straight into the
 * copy's later code) is calls unseen (flow.h says how it is told from code
 * run before the entry). The copy's starts are its entry and the further
 * starts after it (inline_entries.c gives them in that order), each where
 * it is hooked. Where the hook frees (`frees`), the start of the range that
 * code is in is hooked too: a call that passes both frees its block twice,
 * and the second finds it gone, which changes nothing. 0 (also when the
 * flow cannot be followed, a switch's indirect jump: then the entry is
 * hooked as before), or EINVAL with `reason`. */
static int threaded_into(const struct inline_entry *entries, const struct inline_entry *sizes, size_t n, size_t i,
                         bool frees, struct threaded_starts *t, char *reason, size_t size)
{
    const struct inline_entry *e = &entries[i];
    *t = (struct threaded_starts){ .copy = e->entry };
    if (!e->inlined || e->function_ranges == 0 || e->function_ranges > INLINE_FUNCTION_RANGES ||
        e->copy_ranges == 0 || e->copy_ranges > INLINE_COPY_RANGES)
        return 0;
    uintptr_t barriers[2 * INLINE_COPY_RANGES + 1];
    size_t nb = 0;
    barriers[nb++] = (uintptr_t)past_padding(e, sizes ? &sizes[i] : NULL);
    for (size_t k = i + 1; k < n && entries[k].further_start_of == e->entry; k++)
        if (entries[k].same_row)
            barriers[nb++] = (uintptr_t)past_padding(&entries[k], sizes ? &sizes[k] : NULL);
    struct code_range function[INLINE_FUNCTION_RANGES], copy[INLINE_COPY_RANGES];
    function_code(e, function);
    for (unsigned k = 0; k < e->copy_ranges; k++)
        copy[k] = (struct code_range){ (uintptr_t)e->copy_start[k], (size_t)(e->copy_end[k] - e->copy_start[k]) };
    uintptr_t at;
    while (flow_effect_unguarded(function, e->function_ranges, function[0].start, barriers, nb, copy,
                                 e->copy_ranges, &at) == FLOW_REACHES) {
        /* The further start whose range holds that code, not hooked yet. */
        size_t found = n;
        for (size_t k = i + 1; k < n && entries[k].further_start_of == e->entry && found == n; k++)
            if (!entries[k].same_row && !threaded_wanted(t, &entries[k]) && entries[k].entry <= at &&
                at < copy_range_end(e, entries[k].entry))
                found = k;
        if (!frees || found == n || nb == sizeof barriers / sizeof *barriers) {
            snprintf(reason, size,
                     "its code at 0x%lx runs in a loop that need not pass its entry (a jump threaded into the copy "
                     "past its entry): %s", (unsigned long)at,
                     !frees ? "an entry hook would not see every call, and one that makes blocks there too would "
                              "make some twice"
                            : "an entry hook would not see every call, and no start of its ranges leads there");
            t->count = 0;
            return EINVAL;
        }
        barriers[nb++] = (uintptr_t)past_padding(&entries[found], sizes ? &sizes[found] : NULL);
        t->starts[t->count++] = entries[found].entry;
    }
    return 0;
}

/* A copy left out (--partial): its reason added to the list. */
static void leave_out(struct entry_patch *p, uintptr_t at, const char *reason)
{
    size_t used = strlen(p->left_out_why);
    if (used < sizeof p->left_out_why)
        snprintf(p->left_out_why + used, sizeof p->left_out_why - used, "%sthe copy at 0x%lx: %s",
                 p->left_out ? "; " : "", (unsigned long)at, reason);
    p->left_out++;
}

/* How many bytes of whole instructions the jmp at site->at takes (a trial
 * move into scratch, as if to the site itself), and no branch of the
 * function into them. 0, or EINVAL with `reason`. */
static int fit(struct entry_site *site, const struct inline_entry *e, char *reason, size_t size)
{
    uint8_t scratch[128];
    struct emitter trial;
    struct relocation r;
    emit_init(&trial, scratch, sizeof scratch, site->at);
    if (relocate(&trial, site->at, (const uint8_t *)site->at, MOVED_MAX, JMP_REL32_LENGTH, &r) != 0) {
        snprintf(reason, size, "the instruction at 0x%lx cannot be moved: %s", (unsigned long)r.refused_at, r.why);
        return EINVAL;
    }
    site->moved = r.moved;
    struct code_range ranges[INLINE_FUNCTION_RANGES];
    function_code(e, ranges);
    uintptr_t from;
    if (relocate_branch_into(ranges, e->function_ranges, site->at, site->moved, &from)) {
        snprintf(reason, size, "the branch at 0x%lx lands inside the %zu bytes a patch takes", (unsigned long)from,
                 site->moved);
        return EINVAL;
    }
    return 0;
}

/* The CFA of the frame at `pc` as a place (its value, not what is there):
 * %rsp or %rbp plus the offset the call frame information gives. */
static bool cfa_place(uintptr_t pc, struct inline_entry *place)
{
    struct cfi_rule rule;
    if (!cfi_rule_at(pc, &rule) || (rule.cfa_base != CFI_RSP && rule.cfa_base != CFI_RBP))
        return false;
    *place = (struct inline_entry){ .place = PARAM_EXPRESSION, .op_count = 1, .is_value = true,
                                    .holds_high = UINT64_MAX };
    place->ops[0] = (struct place_op){ .atom = rule.cfa_base == CFI_RBP ? DW_OP_breg6 : DW_OP_breg7,
                                       .operand = (uint64_t)(int64_t)rule.cfa_offset };
    return true;
}

/* A copy whose parameter is a register's value at its function's entry:
 * its site recalls the value kept for its frame (its CFA), and the
 * function's entry gets a site that keeps it (*keeper, unless one is
 * there already for the same register). 0, or EINVAL with `reason`. */
static int recall_entry_value(const struct entry_patch *out, struct entry_site *site, const struct inline_entry *e,
                              struct entry_site *keeper, char *reason, size_t size)
{
    static const char *const names[16] = { "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
                                           "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15" };
    keeper->at = 0;
    if (!e->function_entry) {
        snprintf(reason, size, "its parameter is the value %%%s had at the entry of the function it is in, "
                 "whose entry is not known", names[e->reg & 15]);
        return EINVAL;
    }
    if (!cfa_place(site->at, &site->where)) {
        snprintf(reason, size, "its parameter is the value %%%s had at its function's entry, and the frame's CFA "
                 "at 0x%lx is not rsp or rbp plus an offset", names[e->reg & 15], (unsigned long)site->at);
        return EINVAL;
    }
    site->where.inlined = e->inlined;   /* what the copy is, for the counts */
    site->where.further_start_of = e->further_start_of;
    site->where.same_row = e->same_row;
    site->kind = SITE_RECALLS_ENTRY_VALUE;
    site->key = e->function_entry;
    for (size_t i = 0; i < out->count; i++)
        if (out->sites[i].kind == SITE_KEEPS_ENTRY_VALUE && out->sites[i].key == site->key) {
            if (out->sites[i].where.reg == e->reg)
                return 0;
            snprintf(reason, size, "its parameter is the value %%%s had at its function's entry, and another "
                     "copy there needs %%%s's", names[e->reg & 15], names[out->sites[i].where.reg & 15]);
            return EINVAL;
        }
    /* At a function's entry the CFA is %rsp + 8, the return address on top. */
    *keeper = (struct entry_site){ .at = (uintptr_t)e->function_entry, .kind = SITE_KEEPS_ENTRY_VALUE,
                                   .key = e->function_entry,
                                   .where = { .place = PARAM_REGISTER, .reg = e->reg },
                                   .size = { .place = PARAM_EXPRESSION, .op_count = 1, .is_value = true },
                                   .caller = { .place = PARAM_CONSTANT, .value = 0 } };
    keeper->size.ops[0] = (struct place_op){ .atom = DW_OP_breg7, .operand = 8 };
    int err = fit(keeper, e, reason, size);
    if (err)
        keeper->at = 0;
    return err;
}

int entry_sites_prepare(const struct inline_entry *entries, const struct inline_entry *sizes, size_t n,
                        const char *const names[2], bool partial, bool frees, struct entry_patch *out, char *why,
                        size_t why_size)
{
    memset(out, 0, sizeof *out);
    int err = 0;
    uint64_t refused_copy = 0;   /* a copy entered past its entry: its further starts go too */
    struct threaded_starts threaded = { .count = 0 };
    for (size_t i = 0; i < n && !err; i++) {
        struct inline_entry copy = entries[i];
        const struct inline_entry *e = &copy;
        if (copy.further_start_of && !copy.same_row && !threaded_wanted(&threaded, &copy))
            continue;   /* no jump lands there unseen: not hooked */
        if (copy.place == PARAM_FRAME_MEMORY && (copy.frame_is_cfa || copy.frame_is_rbp) && !copy.body &&
            !copy.inlined)
            copy.body = body_past_spills(&copy);
        if (copy.inlined)
            copy.entry = past_padding(&copy, sizes ? &sizes[i] : NULL);
        struct entry_site site = { .at = (uintptr_t)e->entry, .where = *e,
                                   .size = { .place = PARAM_CONSTANT, .value = 0 } };
        if (sizes)
            site.size = sizes[i];
        /* The caller: the return address on top of the stack at the entry
         * of a copy of its own; the entry itself for an inlined one, given
         * as a return address is (one past, as a report reads it). */
        if (e->inlined)
            site.caller = (struct inline_entry){ .place = PARAM_CONSTANT, .value = e->entry + 1 };
        else
            site.caller = (struct inline_entry){ .place = PARAM_REGISTER_MEMORY, .reg = 7, .offset = 0 };
        bool on_stack = e->place == PARAM_FRAME_MEMORY || site.size.place == PARAM_FRAME_MEMORY;
        char reason[288], place_why[224];
        struct cfi_rule rule;
        struct entry_site keeper = { .at = 0 };
        if (e->further_start_of && e->further_start_of == refused_copy) {
            snprintf(reason, sizeof reason, "a further start of the copy at 0x%lx, refused", (unsigned long)refused_copy);
            err = EINVAL;
        } else if (e->further_start_of && e->same_row && !repeats_entry(e)) {
            snprintf(reason, sizeof reason,
                     "its range at 0x%lx starts with the line its entry at 0x%lx does, but not with the same "
                     "instruction: neither an unrolled loop's copy nor the same call (an entry hook would not "
                     "count calls right)", (unsigned long)e->entry, (unsigned long)e->further_start_of);
            err = EINVAL;
        } else if (!readable_place(e, place_why, sizeof place_why)) {
            snprintf(reason, sizeof reason, "parameter %s: %s", names[0], place_why);
            err = EINVAL;
        } else if (site.size.place == PARAM_ENTRY_VALUE) {
            snprintf(reason, sizeof reason, "parameter %s: it is a register's value at its function's entry, "
                     "which memprof recalls for the first parameter only", names[1]);
            err = EINVAL;
        } else if (!readable_place(&site.size, place_why, sizeof place_why)) {
            snprintf(reason, sizeof reason, "parameter %s: %s", names[1], place_why);
            err = EINVAL;
        } else if (on_stack &&
                   !(cfi_rule_at((uintptr_t)e->body, &rule) && (rule.cfa_base == CFI_RSP || rule.cfa_base == CFI_RBP))) {
            snprintf(reason, sizeof reason, "its parameter is in a stack slot, and the frame's CFA at 0x%lx is not rsp or rbp plus an offset",
                     (unsigned long)e->body);
            err = EINVAL;
        } else if (on_stack && (e->place == PARAM_REGISTER || e->place == PARAM_REGISTER_MEMORY ||
                                site.size.place == PARAM_REGISTER || site.size.place == PARAM_REGISTER_MEMORY)) {
            snprintf(reason, sizeof reason, "one parameter is in a stack slot past the prologue, the other in a register at the entry");
            err = EINVAL;
        } else if (e->function_ranges == 0 || e->function_ranges > INLINE_FUNCTION_RANGES) {
            snprintf(reason, sizeof reason, "the function it is in has %s", e->function_ranges ? "too many ranges to check" : "no known code");
            err = EINVAL;
        } else {
            if (on_stack) {
                /* Past the prologue, a slot is at the CFA (the call frame
                 * information's rule there) plus the DWARF offset. */
                site.at = (uintptr_t)e->body;
                if (site.where.place == PARAM_FRAME_MEMORY)
                    frame_place(&site.where, &rule, e->offset);
                if (site.size.place == PARAM_FRAME_MEMORY)
                    frame_place(&site.size, &rule, site.size.offset);
                frame_place(&site.caller, &rule, -8);
            }
            err = fit(&site, e, reason, sizeof reason);
            if (!err && e->place == PARAM_ENTRY_VALUE)
                err = recall_entry_value(out, &site, e, &keeper, reason, sizeof reason);
            if (!err && !e->further_start_of &&
                (err = threaded_into(entries, sizes, n, i, frees, &threaded, reason, sizeof reason)) != 0)
                refused_copy = entries[i].entry;
        }
        /* Else the 8 bytes from the entry: the patch is made only by a
         * thread alone in its process (EXDEV). */
        uintptr_t window = site.at;
        if (!err)
            code_jmp_window(site.at, &window);
        if (err == EINVAL) {   /* every copy refused is named, and --partial hooks the others */
            leave_out(out, site.at, reason);
            err = 0;
            continue;
        }
        if (err) {
            snprintf(why, why_size, "the copy at 0x%lx: %s", (unsigned long)site.at, reason);
            break;
        }
        if (!add_site(out, &site, window))
            err = ENOMEM;
        if (!err && keeper.at) {
            uintptr_t keeper_window = keeper.at;
            code_jmp_window(keeper.at, &keeper_window);
            if (!add_site(out, &keeper, keeper_window))
                err = ENOMEM;
        }
    }
    if (!err && out->left_out && (!partial || out->count == 0)) {
        if (out->count)
            snprintf(why, why_size, "%s (--partial hooks the other %zu)", out->left_out_why, out->count);
        else
            snprintf(why, why_size, "%s", out->left_out_why);
        err = EINVAL;
    }
    if (err)
        entry_sites_free(out);
    return err;
}

static int make_stub(const struct entry_site *site, uint32_t id, const char *name, entry_handler_fn *handler,
                     uintptr_t *entry)
{
    struct code_chunk chunk;
    int err = pool_reserve(site->at, STUB_MAX, &chunk);
    if (err)
        return err;
    struct emitter e;
    struct stub_frames f = { .start = chunk.exec };
    emit_init(&e, chunk.write, chunk.size, chunk.exec);
    emit_frame_begin(&e, 0);   /* no return address: the CFA is rsp at the entry */
    stub_keep_begin(&e);
    place_load(&e, RSI, &site->where);
    place_load(&e, RDX, &site->size);
    place_load(&e, RCX, &site->caller);
    switch (site->kind) {
    case SITE_CALLS_HANDLER:
        emit_mov_imm64(&e, RDI, id);
        emit_mov_imm64(&e, RAX, (uint64_t)(uintptr_t)handler);
        break;
    case SITE_KEEPS_ENTRY_VALUE:   /* (key, the register, the CFA) */
        emit_mov_imm64(&e, RDI, site->key);
        emit_mov_imm64(&e, RAX, (uint64_t)(uintptr_t)entry_value_keep);
        break;
    case SITE_RECALLS_ENTRY_VALUE:   /* (id, the CFA, second, caller, handler, key) */
        emit_mov_imm64(&e, RDI, id);
        emit_mov_imm64(&e, R8, (uint64_t)(uintptr_t)handler);
        emit_mov_imm64(&e, R9, site->key);
        emit_mov_imm64(&e, RAX, (uint64_t)(uintptr_t)entry_value_recall);
        break;
    }
    emit_call_reg(&e, RAX);
    stub_keep_end(&e);
    struct relocation r;
    if (relocate(&e, site->at, (const uint8_t *)site->at, MOVED_MAX, site->moved, &r) != 0 || r.moved != site->moved)
        return e.error == EMIT_OUT_OF_REACH ? ERANGE : EINVAL;
    emit_jmp(&e, site->at + site->moved);
    /* The moved instructions are booked as the entry's state (the books see
     * none of them move rsp): a debugger stopped among them after one that
     * pushes unwinds 8 bytes off until the jmp back. */
    if ((err = stub_publish_resuming(&e, &f, &chunk, "entry", name, site->at)) != 0)
        return err;
    *entry = chunk.exec;
    return 0;
}

int entry_sites_apply(struct entry_patch *p, uint32_t id, const char *name, entry_handler_fn *handler)
{
    if (p->applied)
        return EEXIST;
    if (p->count == 0)
        return ENOENT;
    for (size_t i = 0; i < p->count; i++)
        if (memcmp((const void *)p->patches[i].at, &p->patches[i].before, WINDOW))
            return EINVAL;
    /* Every stub first: an entry is patched only once all have one. */
    int err = 0;
    for (size_t i = 0; i < p->count && !err; i++) {
        uintptr_t stub;
        if (!(err = make_stub(&p->sites[i], id, name, handler, &stub)))
            p->patches[i].after = code_jmp_window_bytes(p->patches[i].at, p->patches[i].before, p->sites[i].at, stub,
                                                        JMP_REL32_LENGTH);
    }
    if (!err && (err = code_patch_apply(p->patches, p->count)) == 0)
        p->applied = 1;
    return err;
}

int entry_sites_restore(struct entry_patch *p)
{
    if (!p->applied)
        return 0;
    int err = code_patch_undo(p->patches, p->count);
    if (!err)
        p->applied = 0;
    return err;
}

void entry_sites_free(struct entry_patch *p)
{
    pages_free(p->sites, p->bytes);
    pages_free(p->patches, p->patch_bytes);
    memset(p, 0, sizeof *p);
}
