/* Sampled call sites reached without the PLT (see heap_sample_sites.h). */
#include "heap_sample_sites.h"
#include "heap_thread.h"
#include "../../arch/x86_64/decode.h"
#include "../../arch/x86_64/emit.h"
#include "../../hook/code_write.h"
#include "../../hook/pool.h"
#include "../../unwind/cfi.h"
#include "../../util/maps.h"
#include <sched.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>

#define MAX_SITES 256
/* A site is changed at its 64th sample point (about 32 MB through it at
 * 512 KiB): checking and changing one costs 0.3-1 ms, which the calls saved
 * repay only on a site that busy. Short runs change none. */
#define SAMPLES_BEFORE_CHANGE 64
#define MAX_COUNTED 1024           /* return addresses counted (open addressing) */
#define MAX_STUBS 16               /* stub pairs, one per 2 GB of code */
#define MAX_FUNCTION_BYTES 16384   /* decoded from a function's start to find a call's boundary */
#define STUB_BYTES 128
#define CC_BE 6

struct stub_pair {
    uintptr_t malloc_entry, free_entry;
};

struct counted {
    uintptr_t ret;   /* 0: empty */
    uint32_t samples;
};

static struct {
    bool busy;                          /* held by one offer, or by enable/restore */
    bool enabled;
    struct sample_stub_targets targets; /* what stubs[] jump to */
    struct stub_pair stubs[MAX_STUBS];
    size_t stub_count;
    struct code_patch sites[MAX_SITES];
    size_t site_count;
    struct counted counted[MAX_COUNTED];
    size_t counted_count;
} state;

static bool claim(void)
{
    return !__atomic_exchange_n(&state.busy, true, __ATOMIC_ACQUIRE);
}

static void release(void)
{
    __atomic_store_n(&state.busy, false, __ATOMIC_RELEASE);
}

/* Outside hooks: an offer holds it for at most one site's change. */
static void claim_waiting(void)
{
    while (!claim())
        sched_yield();
}

/* The samples seen at `ret`, this one counted; 0 when the table is full. */
static uint32_t count_sample(uintptr_t ret)
{
    size_t i = (size_t)(((uint32_t)ret * 0x9E3779B1u) >> 22) & (MAX_COUNTED - 1);
    for (size_t probes = 0; probes < MAX_COUNTED; probes++, i = (i + 1) & (MAX_COUNTED - 1)) {
        struct counted *c = &state.counted[i];
        if (c->ret == ret)
            return c->samples < UINT32_MAX ? ++c->samples : c->samples;
        if (!c->ret) {
            if (state.counted_count >= MAX_COUNTED * 3 / 4)
                return 0;
            state.counted_count++;
            *c = (struct counted){ ret, 1 };
            return 1;
        }
    }
    return 0;
}

/* A PLT entry: an endbr64 at most (4 bytes, no operand), then jmp
 * *slot(%rip). The slot, or 0. */
static uintptr_t plt_slot(const struct maps *maps, uintptr_t entry)
{
    const struct maps_range *r = maps_find(maps, entry);
    if (!r || !(r->prot & PROT_EXEC) || !maps_readable(maps, entry, 16))
        return 0;
    struct insn in;
    for (uintptr_t pc = entry; pc < entry + 8; pc += in.length) {
        if (!decode_insn((const void *)pc, 16 - (pc - entry), pc, &in))
            return 0;
        if (in.kind == INSN_JMP_INDIRECT)
            return in.rip_relative && maps_readable(maps, in.rip_address, sizeof(uintptr_t)) ? in.rip_address : 0;
        if (in.kind != INSN_OTHER || in.rip_relative || in.length != 4)
            return 0;
    }
    return 0;
}

/* The call rel32 that returns to `ret`, found on an instruction boundary by
 * decoding its function from the start its unwind table gives, calling a
 * PLT entry whose slot holds the hook of `kind`: its target, or 0. */
static uintptr_t call_to_hook(const struct maps *maps, uintptr_t ret, enum sample_site_kind kind)
{
    uintptr_t call = ret - 5, from, to;
    const struct maps_range *r = maps_find(maps, call);
    if (!r || !(r->prot & PROT_EXEC) || r->end < ret)
        return 0;
    if (!cfi_function_at(ret - 1, &from, &to) || from > call || to < ret || to - from > MAX_FUNCTION_BYTES ||
        !maps_readable(maps, from, to - from))
        return 0;
    struct insn in = { 0 };
    uintptr_t pc = from;
    while (pc < call && decode_insn((const void *)pc, to - pc, pc, &in))
        pc += in.length;
    if (pc != call || !decode_insn((const void *)call, to - call, call, &in) || in.kind != INSN_CALL_REL32 ||
        in.length != 5)
        return 0;
    uintptr_t slot = plt_slot(maps, in.target);
    uintptr_t hook = kind == SAMPLE_SITE_FREE ? state.targets.free_hook : state.targets.malloc_hook;
    return slot && __atomic_load_n((const uintptr_t *)slot, __ATOMIC_ACQUIRE) == hook ? in.target : 0;
}

/* The stubs of state.targets in a chunk of the pool: the slots they jump
 * through first, then malloc's entry after its slower path (so that the
 * branch to that goes back, to an address already known). A free's entry
 * has no branch on its filter byte: the byte indexes the jump table (0: the
 * real free; any other count: the lookup, heap_hooks.c's free_filtered). A
 * conditional branch waiting for that load cost more than the jump does
 * (doc/benchmarks.md). An int3 after each jump: the processor does not run
 * on into the next entry while the jump's target is fetched. */
static bool write_stubs(const struct code_chunk *c, struct stub_pair *out)
{
    const struct sample_stub_targets *t = &state.targets;
    struct emitter e;
    emit_init(&e, c->write, c->size, c->exec);
    uintptr_t next_malloc = emit_quad(&e, t->next_malloc), malloc_hook = emit_quad(&e, t->malloc_hook);
    /* malloc at a sample point (the count went to 0 or below): the count
     * back as it was, and the hook, which counts again and records. */
    uintptr_t malloc_point = emit_here(&e);
    emit_add_fs(&e, t->count_offset, RDI);
    emit_jmp_rip(&e, malloc_hook);
    emit_int3(&e);
    out->malloc_entry = emit_here(&e);
    emit_sub_fs(&e, t->count_offset, RDI);
    emit_jcc(&e, CC_BE, malloc_point);
    emit_jmp_rip(&e, next_malloc);
    emit_int3(&e);
    /* SAMPLED_FILTER_INDEX: the 16-byte granule, modulo the filter; the
     * filter and the table below 2 GiB (else EMIT_OUT_OF_REACH: no stubs). */
    out->free_entry = emit_here(&e);
    emit_mov(&e, RAX, RDI);
    emit_shr32_imm(&e, RAX, ADDRESS_GRANULE_SHIFT);
    emit_and_imm(&e, RAX, (int32_t)((1u << SAMPLED_FILTER_BITS) - 1));
    emit_movzbl_load_table(&e, RAX, (uintptr_t)t->filter, RAX);
    emit_jmp_table(&e, (uintptr_t)t->free_targets, RAX);
    emit_int3(&e);
    return emit_finish(&e) == EMIT_OK && pool_publish(c, e.len) == 0;
}

static uintptr_t entry_of(const struct stub_pair *pair, enum sample_site_kind kind)
{
    return kind == SAMPLE_SITE_FREE ? pair->free_entry : pair->malloc_entry;
}

/* The entry of `kind` in stubs a rel32 at `from` reaches, made if none. */
static uintptr_t stub_near(uintptr_t from, enum sample_site_kind kind)
{
    for (size_t i = 0; i < state.stub_count; i++)
        if (emit_rel32_reaches(from, entry_of(&state.stubs[i], kind)))
            return entry_of(&state.stubs[i], kind);
    struct code_chunk chunk;
    struct stub_pair made;
    if (state.stub_count == MAX_STUBS || pool_reserve(from, STUB_BYTES, &chunk) != 0 || !write_stubs(&chunk, &made))
        return 0;
    state.stubs[state.stub_count++] = made;
    return emit_rel32_reaches(from, entry_of(&made, kind)) ? entry_of(&made, kind) : 0;
}

static void change_site(uintptr_t ret, enum sample_site_kind kind)
{
    struct maps maps;
    if (maps_load(&maps) != 0)
        return;
    uintptr_t target = call_to_hook(&maps, ret, kind);
    uintptr_t stub = target ? stub_near(ret, kind) : 0;
    maps_release(&maps);
    if (!stub)
        return;
    struct code_patch p = {
        .at = ret - 4,
        .before = (uint32_t)(int32_t)(int64_t)(target - ret),
        .after = (uint32_t)(int32_t)(int64_t)(stub - ret),
        .width = 4,
    };
    if (code_patch_apply(&p, 1) == 0)
        state.sites[state.site_count++] = p;
}

void heap_sample_sites_offer(uintptr_t ret, enum sample_site_kind kind)
{
    if (!__atomic_load_n(&state.enabled, __ATOMIC_ACQUIRE) || !claim())
        return;
    if (state.enabled && state.site_count < MAX_SITES && count_sample(ret) == SAMPLES_BEFORE_CHANGE)
        change_site(ret, kind);
    release();
}

void heap_sample_sites_enable(const struct sample_stub_targets *t)
{
    code_write_prepare();   /* now: at a traced start, the process has one thread */
    claim_waiting();
    const struct sample_stub_targets *had = &state.targets;
    if (t->count_offset != had->count_offset || t->filter != had->filter || t->free_targets != had->free_targets ||
        t->next_malloc != had->next_malloc || t->malloc_hook != had->malloc_hook || t->free_hook != had->free_hook) {
        state.targets = *t;
        state.stub_count = 0;   /* stubs of other targets: left in the pool, never reached again */
    }
    /* The stubs name the filter and its table by 32-bit addresses. */
    bool reachable = t->filter && (uintptr_t)t->filter <= INT32_MAX && (uintptr_t)t->free_targets <= INT32_MAX;
    __atomic_store_n(&state.enabled, reachable, __ATOMIC_RELEASE);
    release();
}

void heap_sample_sites_restore(void)
{
    claim_waiting();
    __atomic_store_n(&state.enabled, false, __ATOMIC_RELEASE);
    /* Only sites still mapped and still calling a stub (their object may
     * have been unloaded, the address reused): all in one change. */
    struct maps maps;
    if (state.site_count && maps_load(&maps) == 0) {
        size_t n = 0;
        for (size_t i = 0; i < state.site_count; i++) {
            struct code_patch p = state.sites[i];
            uint32_t now;
            if (maps_readable(&maps, p.at, 4) && (memcpy(&now, (const void *)p.at, 4), now == (uint32_t)p.after))
                state.sites[n++] = p;
        }
        maps_release(&maps);
        if (code_patch_undo(state.sites, n) != 0)
            for (size_t i = 0; i < n; i++)   /* all or none failed: each alone */
                code_patch_undo(&state.sites[i], 1);
    }
    state.site_count = 0;
    if (state.counted_count) {   /* (each choice of hooks comes here: at start, three times) */
        memset(state.counted, 0, sizeof state.counted);
        state.counted_count = 0;
    }
    release();
}

size_t heap_sample_sites_count(void)
{
    return __atomic_load_n(&state.site_count, __ATOMIC_RELAXED);
}

void heap_sample_sites_after_fork(void)
{
    release();
}
