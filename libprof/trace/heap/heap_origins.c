/* The origins of recorded blocks (heap_origins.h): each thread's interning
 * of (key, link), the walk to an allocation's callers, and the origin of an
 * allocation the hooks could not name from the thread's last site. */
#include "heap_origins.h"
#include "heap_hooks.h"
#include "heap_ruby.h"
#include "../../arch/cpu.h"
#include "../../util/pages.h"
#include "../../objfile/object.h"
#include "../../util/environment.h"
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

/* --- origins: the owner's interning of (key, link) ------------------------- */

/* The key's top bits (the thread serial) folded down first: a record
 * holds the origins of every thread that held it (heap_records.c), one site
 * under many serials, which the product alone would put in one bucket. */
static uint64_t mix(uint64_t key, uint64_t link)
{
    uint64_t h = key ^ (link * 0xC2B2AE3D27D4EB4Full);
    return (h ^ h >> 29) * 0x9E3779B97F4A7C15ull;
}

static size_t origin_array_bytes(size_t capacity)
{
    return sizeof(struct origin_array) + capacity * sizeof(struct heap_origin);
}

static void index_insert(uint32_t *index, size_t capacity, const struct heap_origin *records, uint32_t id)
{
    size_t i = (size_t)(mix(records[id].key, records[id].link) >> 32) & (capacity - 1);
    while (index[i])
        i = (i + 1) & (capacity - 1);
    index[i] = id + 1;
}

/* Room for one more origin: the array grows by a published copy (a report
 * may be reading it), the index (the owner's alone) by a rebuild. */
static bool origins_make_room(struct heap_thread *t)
{
    struct origin_array *a = t->origins;
    size_t n = t->origin_count;
    if (!a || n == a->capacity) {
        size_t capacity = a ? a->capacity * 2 : 64;
        struct origin_array *b = pages_alloc_filled(origin_array_bytes(capacity));
        if (!b)
            return false;
        b->capacity = capacity;
        if (a)
            memcpy(b->records, a->records, n * sizeof a->records[0]);
        __atomic_store_n(&t->origins, b, __ATOMIC_SEQ_CST);
        t->last_record = &b->records[BLOCK_WORD_ORIGIN(t->last_origin_word)];   /* never the old copy's */
        if (a)
            readers_retire(&t->origins_retired, a, origin_array_bytes(a->capacity));
        a = b;
    }
    if ((n + 1) * 2 > t->origin_index_capacity) {
        size_t capacity = t->origin_index_capacity ? t->origin_index_capacity * 2 : 128;
        uint32_t *index = pages_alloc_filled(capacity * sizeof *index);
        if (!index)
            return false;
        for (uint32_t id = 0; id < n; id++)
            index_insert(index, capacity, a->records, id);
        pages_free_quiet(t->origin_index, t->origin_index_capacity * sizeof *index);   /* the owner's alone */
        t->origin_index = index;
        t->origin_index_capacity = capacity;
    }
    return true;
}

/* The id of (key, link), added if new; UINT32_MAX when out of memory. */
static uint32_t origin_put(struct heap_thread *t, uint64_t key, uint64_t link)
{
    if (t->origin_index_capacity) {
        size_t mask = t->origin_index_capacity - 1;
        for (size_t i = (size_t)(mix(key, link) >> 32) & mask; t->origin_index[i]; i = (i + 1) & mask) {
            uint32_t id = t->origin_index[i] - 1;
            const struct heap_origin *r = &t->origins->records[id];
            if (r->key == key && r->link == link)
                return id;
        }
    }
    if (t->origin_count >= BLOCK_ORIGIN_MAX || !origins_make_room(t))
        return UINT32_MAX;
    uint32_t id = (uint32_t)t->origin_count;
    t->origins->records[id] = (struct heap_origin){ .key = key, .link = link };
    index_insert(t->origin_index, t->origin_index_capacity, t->origins->records, id);
    __atomic_store_n(&t->origin_count, (size_t)id + 1, __ATOMIC_RELEASE);
    return id;
}

/* --- backtraces ------------------------------------------------------------ */

/* libunwind's unw_backtrace (it reads the unwind tables, so code built
 * without frame pointers unwinds too, and it does not call malloc), loaded
 * at start when more than one frame is asked for. memprof's own unwinder
 * (unwind/backtrace.h) answers first, with the same frames, a cache of
 * rules per thread; libunwind where it cannot say (a signal frame), or for
 * every stack with MEMPROF_UNWIND=libunwind. With one frame only an
 * allocation wrapper's caller is walked to, a few frames up: memprof's own
 * unwinder alone (libunwind and liblzma loaded cost a traced start 0.5 ms). */
static int (*libunwind_backtrace)(void **frames, int size);
static bool own_unwinder = true;
static uintptr_t self_start, self_end;   /* memprof's own code: not a frame */

static int own_backtrace(struct heap_thread *t, void **frames, int size)
{
    uint64_t generation = got_objects_generation();
    int n = t->entry_pc ? unwind_backtrace_from(t->unwind, generation, t->entry_pc, t->entry_cfa, t->entry_bp,
                                                frames, size)
                        : -1;
    return n >= 0 ? n : unwind_backtrace(t->unwind, generation, frames, size);
}

static int backtrace_of(struct heap_thread *t, void **frames, int size)
{
    bool own = own_unwinder && t && (t->unwind || (t->unwind = pages_alloc(sizeof *t->unwind)));
    int n = own ? own_backtrace(t, frames, size) : -1;
    if (n >= 0)
        return n;
    if (libunwind_backtrace) {
        n = libunwind_backtrace(frames, size);
        for (int i = 0; i < n; i++)
            frames[i] = (void *)cpu_libunwind_return_address((uintptr_t)frames[i]);
        return n;
    }
    /* No libunwind (one frame): the frames below the one it could not say
     * (a signal frame, code without unwind tables), where a wrapper's
     * caller usually is. */
    return own ? t->unwind->frames_said : 0;
}

/* Stacks can be walked: memprof's own unwinder, or libunwind. */
static bool can_walk(void)
{
    return own_unwinder || libunwind_backtrace;
}

/* The callers above `site`: heap.frames - 1 of them, or, for a site in an
 * allocation wrapper, every frame up to the first caller outside the
 * wrappers and heap.frames - 1 from there. */
static uint32_t callers_of(struct heap_thread *t, uintptr_t site, uintptr_t *caller, bool wrapped)
{
    void *raw[HEAP_MAX_FRAMES + 8];
    int n = backtrace_of(t, raw, wrapped ? HEAP_MAX_FRAMES + 8 : heap.frames + 8);
    uint32_t count = 0, limit = wrapped ? HEAP_MAX_FRAMES - 1 : (uint32_t)heap.frames - 1;
    bool past_site = false;
    for (int i = 0; i < n && count < limit; i++) {
        uintptr_t ip = (uintptr_t)raw[i];
        if (ip >= self_start && ip < self_end)
            continue;
        if (!past_site) {       /* the site, after any frames of the allocator itself
                                   (operator new's malloc is charged to new's caller) */
            past_site = ip == site;
            continue;
        }
        caller[count++] = ip;
        if (wrapped && !heap_wrappers_contain(ip)) {   /* the caller charged */
            wrapped = false;
            if (count + (uint32_t)heap.frames - 1 < limit)
                limit = count + (uint32_t)heap.frames - 1;
        }
    }
    return past_site ? count : 0;
}

uintptr_t heap_caller_outside_wrappers(uintptr_t site)
{
    if (!can_walk() || !heap_wrappers_contain(site))
        return site;
    uintptr_t pcs[HEAP_MAX_FRAMES - 1];
    uint32_t n = callers_of(heap_my_thread, site, pcs, true);
    for (uint32_t i = 0; i < n; i++)
        if (!heap_wrappers_contain(pcs[i]))
            return pcs[i];
    return site;
}

void heap_backtraces_prepare(void)
{
    struct elf_object objects[256];
    size_t n = elf_objects_snapshot(objects, 256);
    const struct elf_object *self = elf_objects_find(objects, n < 256 ? n : 256, (uintptr_t)&heap_backtraces_prepare);
    if (self) {
        self_start = self->start;
        self_end = self->end;
    }
    const char *unwinder = env_get("MEMPROF_UNWIND");
    own_unwinder = !unwinder || strcmp(unwinder, "libunwind") != 0;
    if (libunwind_backtrace || (heap.frames == 1 && own_unwinder))
        return;
    void *lib = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    *(void **)&libunwind_backtrace = lib ? dlsym(lib, "unw_backtrace") : NULL;
    if (!libunwind_backtrace) {
        heap.frames = 1;
        return;
    }
    /* A cache of unwind information per thread: no lock shared by threads. */
    void **local = dlsym(lib, CPU_LIBUNWIND_PREFIX "local_addr_space");
    int (*set_policy)(void *, int) = (int (*)(void *, int))dlsym(lib, CPU_LIBUNWIND_PREFIX "set_caching_policy");
    if (local && set_policy)
        set_policy(*local, 2 /* UNW_CACHE_PER_THREAD */);
}

bool heap_tracer_has_backtraces(void)
{
    return libunwind_backtrace != NULL;
}

/* The chain of callers above `site` as an origin link (chain id + 1, 0:
 * none). The same stack is usually seen again: a cache of whole chains. */
static uint64_t caller_link(struct heap_thread *t, uintptr_t site, bool wrapped)
{
    uintptr_t pcs[HEAP_MAX_FRAMES - 1];
    uint32_t count = callers_of(t, site, pcs, wrapped);
    uint64_t h = count;
    for (uint32_t i = 0; i < count; i++)
        h = (h ^ pcs[i]) * 0x9E3779B97F4A7C15ull;
    struct caller_cache_entry *c = &t->callers[(h >> 58) % CALLER_CACHE];
    if (c->link && c->count == count && memcmp(c->pcs, pcs, count * sizeof pcs[0]) == 0)
        return c->link;
    uint32_t id = UINT32_MAX;
    for (uint32_t i = count; i-- > 0;) {
        id = origin_put(t, pcs[i], id == UINT32_MAX ? 0 : (uint64_t)id + 1);
        if (id == UINT32_MAX)
            return 0;
    }
    if (id == UINT32_MAX)
        return 0;
    c->count = count;
    c->link = id + 1;
    memcpy(c->pcs, pcs, count * sizeof pcs[0]);
    return c->link;
}

/* Whether `site` is in an allocation wrapper: the thread's last answer for
 * the same site and table (with stacks, every allocation asks). */
static bool site_wrapped(struct heap_thread *t, uintptr_t site)
{
    uint64_t generation = heap_wrappers_generation();
    if (site != t->wrapped_site || generation != t->wrapped_generation) {
        t->site_is_wrapped = heap_wrappers_contain(site);
        t->wrapped_site = site;
        t->wrapped_generation = generation;
    }
    return t->site_is_wrapped;
}

static uint32_t origin_of(struct heap_thread *t, uintptr_t site)
{
    uint64_t key = (uint64_t)site | (uint64_t)t->serial << THREAD_SHIFT;
    bool wrapped = site_wrapped(t, site);
    /* Walked from malloc's entry: a stack the last walk from this entry
     * would find again has that walk's origin. */
    bool memo_ok = t->entry_pc && t->unwind && (wrapped || heap.frames > 1) && !heap_ruby_enabled();
    struct heap_memo *memo = t->entry_pc ? &t->memos[unwind_memo_slot(t->entry_pc, t->entry_cfa)] : NULL;
    uint32_t remembered = memo_ok ? memo_origin(t, memo, site, t->entry_pc, t->entry_cfa, t->entry_bp) : UINT32_MAX;
    if (remembered != UINT32_MAX)
        return remembered;
    uint64_t link = 0;
    if (can_walk() && (heap.frames > 1 || wrapped)) {
        link = caller_link(t, site, wrapped);
        owner_add(&t->stacks_walked, 1);
    }
    if (heap_ruby_enabled())
        link |= (uint64_t)heap_ruby_line(&t->ruby_lines) << 32;
    uint32_t id;
    if (link && key == t->last_link_key && link == t->last_link) {
        id = t->last_link_origin;
    } else {
        id = origin_put(t, key, link);
        if (link && id != UINT32_MAX) {
            t->last_link_key = key;
            t->last_link = link;
            t->last_link_origin = id;
        }
    }
    /* Whatever walked from this entry just now is what its slot says: a
     * walk without a memo of its own leaves the slot invalid. */
    if (memo)
        *memo = (struct heap_memo){
            .valid = memo_ok && id != UINT32_MAX && unwind_memo_recorded(t->unwind, t->entry_pc, t->entry_cfa),
            .site = site, .generation = heap_wrappers_generation(), .frames = heap.frames, .origin = id,
        };
    /* The next allocation at this site may skip all this: only when the
     * site alone is the whole origin. */
    if (!link && heap.frames == 1 && !wrapped && id != UINT32_MAX && !heap_ruby_enabled()) {
        heap_remember_last_site(t, site, id);
        if (t->site_origins || (t->site_origins = pages_alloc(sizeof *t->site_origins << SITE_ORIGIN_BITS))) {
            *heap_site_origin_slot(t, site) = id + 1;
            t->origins->records[id].alone = heap_wrappers_generation() + 1;
        }
    }
    return id;
}

/* A backtrace starts at the hook's entry (backtrace_of), not inside memprof;
 * `entry_pc` is the site, unless charged elsewhere. */
uint32_t heap_full_origin(struct heap_thread *t, uintptr_t site, uintptr_t entry_pc, uintptr_t entry_cfa,
                          uintptr_t entry_bp)
{
    bool entered = entry_cfa && !t->entry_pc && *(const uintptr_t *)(entry_cfa - 8) == entry_pc;
    if (entered) {
        t->entry_bp = callers_bp(entry_cfa, entry_bp);
        t->entry_cfa = entry_cfa;
        t->entry_pc = entry_pc;
    }
    uint32_t id = origin_of(t, site);
    if (entered)
        t->entry_pc = 0;
    return id;
}

