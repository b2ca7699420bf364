/* The Ruby tracer's hooks: every way CRuby 3.1 makes a heap object, recorded
 * as address -> (site, class, type, epoch).
 *
 *   rb_*newobj_of        strings, arrays, hashes, ... (GOT slots of libruby
 *                        and of every extension)
 *   rb_data_*object_wrap T_DATA (the zalloc variants call wrap through the
 *                        PLT: hooking them too would count twice)
 *   rb_imemo_new         T_IMEMO
 *   class allocators     T_OBJECT: BasicObject's and Exception's allocators
 *                        are internal functions, so memprof wraps them
 *
 * Liveness is not tracked by a free hook: an allocation at an address already
 * recorded means the previous object there died, and the report checks every
 * record against the heap. */
#include "ruby.h"
#include "ruby_state.h"
#include "ruby_thread.h"
#include "../../hook/got.h"
#include "../../util/fault.h"
#include "../../util/pages.h"
#include "../../util/reentry.h"
#include <dlfcn.h>
#include <sys/mman.h>
#include <pthread.h>
#include <string.h>

struct ruby_tracer ruby_tracer = { .config = { .site = RUBY_SITE_NEAREST, .frames = 1, .sample = 1 },
                                    .objects = { .last = &slot_map_no_page } };

static bool api_resolved, api_present;
bool ruby_recording;
static bool safe_point_job_done;
/* Started in a running VM: its classes' allocators to wrap at the job. */
static bool classes_to_wrap;
static void (*exit_callback)(void);

static inline __attribute__((always_inline)) VALUE record(VALUE obj);

/* Every hooked allocator, once. Each hook is declared with the allocator's
 * own function type, so a prototype mismatch is a compile error. */
#define RUBY_ALLOCATOR_HOOKS(X)                                                              \
    X(rb_wb_protected_newobj_of, rb_wb_newobj_fn, (VALUE klass, VALUE flags, size_t size),   \
      (klass, flags, size))                                                                  \
    X(rb_wb_unprotected_newobj_of, rb_wb_newobj_fn, (VALUE klass, VALUE flags, size_t size), \
      (klass, flags, size))                                                                  \
    X(rb_ec_wb_protected_newobj_of, rb_ec_wb_newobj_fn,                                      \
      (void *ec, VALUE klass, VALUE flags, size_t size), (ec, klass, flags, size))           \
    X(rb_newobj_of, rb_newobj_fn, (VALUE klass, VALUE flags), (klass, flags))                \
    X(rb_data_object_wrap, rb_data_object_wrap_fn,                                           \
      (VALUE klass, void *data, ruby_data_func *mark, ruby_data_func *free),                 \
      (klass, data, mark, free))                                                             \
    X(rb_data_typed_object_wrap, rb_data_typed_object_wrap_fn,                               \
      (VALUE klass, void *data, const struct ruby_data_type *type), (klass, data, type))     \
    X(rb_imemo_new, rb_imemo_new_fn, (unsigned type, VALUE v1, VALUE v2, VALUE v3, VALUE v0), \
      (type, v1, v2, v3, v0))

#define DEFINE_HOOK(name, fn_type, params, args) \
    static fn_type *next_##name;                 \
    static fn_type hook_##name;                  \
    static VALUE hook_##name params              \
    {                                            \
        return record(next_##name args);         \
    }
RUBY_ALLOCATOR_HOOKS(DEFINE_HOOK)

/* The hooks beside the allocators': rb_define_alloc_func (below) and
 * munmap (heap pages given back, below). */
static rb_define_alloc_func_fn *next_rb_define_alloc_func;
static void hook_rb_define_alloc_func(VALUE klass, ruby_alloc_func *func);
typedef int munmap_fn(void *addr, size_t length);
static munmap_fn *next_munmap;
static munmap_fn hook_munmap;

/* Every hook, in one array so that a start patches the objects' slots in one
 * pass (a pass reads every object's relocations and /proc/self/maps): those
 * recording needs, then munmap's, which stays as long as there are records. */
#define HOOK_ENTRY(name, fn_type, params, args) \
    { .symbol = #name, .replacement = (void *)hook_##name, .next = (void **)&next_##name },
static struct got_hook hooks[] = {
    RUBY_ALLOCATOR_HOOKS(HOOK_ENTRY) HOOK_ENTRY(rb_define_alloc_func, , , ) HOOK_ENTRY(munmap, , , )
};
#define HOOK_COUNT (sizeof hooks / sizeof hooks[0])
#define RECORDING_HOOK_COUNT (HOOK_COUNT - 1)
static struct got_hook *const munmap_hook = &hooks[HOOK_COUNT - 1];

/* --- T_OBJECT: wrapped class allocators -------------------------------- */

/* The classes whose allocator makes T_OBJECTs without a GOT slot. */
#define RUBY_WRAPPED_ALLOCATORS(X) X(rb_cBasicObject) X(rb_eException)

struct wrapped_allocator {
    VALUE *klass;                 /* the class variable in libruby */
    ruby_alloc_func **original;   /* what the wrapper calls */
    ruby_alloc_func *wrapper;
};

#define DEFINE_WRAPPER(var)                         \
    static ruby_alloc_func *original_##var;         \
    static VALUE allocate_##var(VALUE klass)        \
    {                                               \
        return record(original_##var(klass));       \
    }
RUBY_WRAPPED_ALLOCATORS(DEFINE_WRAPPER)
static struct wrapped_allocator allocators[] = {
#define WRAPPER_ENTRY(var) { .original = &original_##var, .wrapper = allocate_##var },
    RUBY_WRAPPED_ALLOCATORS(WRAPPER_ENTRY)
};
#define ALLOCATOR_COUNT (sizeof allocators / sizeof allocators[0])

static bool is_wrapper(ruby_alloc_func *f)
{
    for (size_t i = 0; i < ALLOCATOR_COUNT; i++)
        if (allocators[i].wrapper == f)
            return true;
    return false;
}

static struct wrapped_allocator *wrapped_for(VALUE klass)
{
    for (size_t i = 0; klass && i < ALLOCATOR_COUNT; i++)
        if (allocators[i].klass && *allocators[i].klass == klass)
            return &allocators[i];
    return NULL;
}

/* Loaded before the VM: the VM's Init defines these allocators through the
 * PLT, and memprof puts its wrappers in their place. */
static void hook_rb_define_alloc_func(VALUE klass, ruby_alloc_func *func)
{
    struct wrapped_allocator *w = wrapped_for(klass);
    if (w && func && !is_wrapper(func)) {
        *w->original = func;
        func = w->wrapper;
    }
    next_rb_define_alloc_func(klass, func);
}

/* Loaded into a running VM: replace the allocators now (a plain store in
 * the class; nothing allocates). */
static void wrap_allocators(void)
{
    const struct ruby_api *api = &ruby_tracer.api;
    for (size_t i = 0; i < ALLOCATOR_COUNT; i++) {
        struct wrapped_allocator *w = &allocators[i];
        if (!*w->klass)
            continue;   /* before Init: the GOT hook will see it defined */
        ruby_alloc_func *current = api->rb_get_alloc_func(*w->klass);
        if (!current || is_wrapper(current))
            continue;
        *w->original = current;
        api->rb_define_alloc_func(*w->klass, w->wrapper);
    }
}

/* Classes made before a start in a running VM: each got its allocator from
 * its superclass when it was made (Ruby copies it), BasicObject's before
 * memprof wrapped it. Wrapped too, at a safe point; dead classes awaiting
 * the sweep left alone. */
static int wrap_classes_in(void *start, void *end, size_t stride, void *unused)
{
    (void)unused;
    const struct ruby_api *api = &ruby_tracer.api;
    for (char *slot = start; slot < (char *)end; slot += stride) {
        const struct ruby_basic *b = (const struct ruby_basic *)slot;
        if ((b->flags & RUBY_T_MASK) != RUBY_T_CLASS || (b->flags & RUBY_FL_SINGLETON) ||
            !api->rb_objspace_markable_object_p((VALUE)slot))
            continue;
        ruby_alloc_func *current = api->rb_get_alloc_func((VALUE)slot);
        for (size_t i = 0; current && i < ALLOCATOR_COUNT; i++)
            if (*allocators[i].original == current) {
                api->rb_define_alloc_func((VALUE)slot, allocators[i].wrapper);
                break;
            }
    }
    return 0;
}

static void unwrap_allocators(void)
{
    const struct ruby_api *api = &ruby_tracer.api;
    for (size_t i = 0; i < ALLOCATOR_COUNT; i++) {
        struct wrapped_allocator *w = &allocators[i];
        if (*w->klass && *w->original && api->rb_get_alloc_func(*w->klass) == w->wrapper)
            api->rb_define_alloc_func(*w->klass, *w->original);
    }
}

/* --- API ----------------------------------------------------------------- */

bool ruby_tracer_available(void)
{
    if (api_resolved)
        return api_present;
    struct ruby_api *api = &ruby_tracer.api;
#define RESOLVE(fn) (*(void **)&api->fn = dlsym(RTLD_DEFAULT, #fn)) != NULL
    api_present = RESOLVE(rb_sourcefile) && RESOLVE(rb_sourceline) &&
                  RESOLVE(rb_class_path_cached) && RESOLVE(rb_string_value_ptr) &&
                  RESOLVE(rb_objspace_markable_object_p) && RESOLVE(rb_during_gc) &&
                  RESOLVE(rb_gc_count) &&
                  RESOLVE(rb_postponed_job_register_one) && RESOLVE(rb_set_end_proc) &&
                  RESOLVE(rb_profile_frames) && RESOLVE(rb_profile_frame_path) &&
                  RESOLVE(rb_class_real) && RESOLVE(rb_get_alloc_func) &&
                  RESOLVE(rb_define_alloc_func) && RESOLVE(rb_gc_location) &&
                  RESOLVE(rb_data_typed_object_wrap) && RESOLVE(rb_gc_register_mark_object) &&
                  RESOLVE(ruby_thread_has_gvl_p) &&
                  RESOLVE(rb_cBasicObject) && RESOLVE(rb_eException) &&
                  RESOLVE(ruby_current_vm_ptr) && RESOLVE(ruby_single_main_ractor);
    (void)(RESOLVE(rb_obj_memsize_of));
    (void)(RESOLVE(rb_gc));
    (void)(RESOLVE(rb_objspace_each_objects));
    (void)(RESOLVE(ruby_native_thread_p));
    (void)(RESOLVE(ruby_version));   /* without it, no thread layout is trusted (ruby_thread.c) */
#undef RESOLVE
    for (size_t i = 0; api_present && i < RECORDING_HOOK_COUNT; i++)
        api_present = dlsym(RTLD_DEFAULT, hooks[i].symbol) != NULL;
    if (api_present) {
        slot_map_init(&ruby_tracer.objects, RUBY_HEAP_PAGE_ALIGN, RUBY_SLOT_SIZE);
        size_t i = 0;
#define CLASS_VARIABLE(var) allocators[i++].klass = api->var;
        RUBY_WRAPPED_ALLOCATORS(CLASS_VARIABLE)
    }
    api_resolved = true;
    return api_present;
}

bool ruby_tracer_vm_running(void)
{
    return ruby_tracer_available() && *ruby_tracer.api.ruby_current_vm_ptr != NULL;
}

static void end_proc(VALUE unused)
{
    (void)unused;
    if (exit_callback)
        exit_callback();
}

/* Runs at a Ruby safe point, where memprof may allocate Ruby objects: once,
 * the end proc for the exit report and the compaction watcher; after a start
 * in a running VM, the allocators of the classes it had made. */
static void at_safe_point(void *unused)
{
    (void)unused;
    static bool vm_set_up;
    bool in = reentry_enter();   /* memprof's own objects are not recorded */
    if (!vm_set_up) {
        vm_set_up = true;
        ruby_layout_check(&ruby_tracer.api);
        fault_guard_install();   /* in front of the VM's own handlers, installed by now */
        if (exit_callback)
            ruby_tracer.api.rb_set_end_proc(end_proc, 0);
        ruby_compact_watch();
    }
    if (classes_to_wrap && ruby_recording && ruby_tracer.api.rb_objspace_each_objects)
        ruby_tracer.api.rb_objspace_each_objects(wrap_classes_in, NULL);
    classes_to_wrap = false;
    if (in)
        reentry_leave();
}

/* The safe point job asked for: now, from Ruby code (Memprof.start), else
 * at the next new origin, on a thread that runs Ruby code. */
static void ask_for_safe_point(void)
{
    if (!ruby_tracer.api.ruby_thread_has_gvl_p() || !ruby_tracer_postpone(at_safe_point, NULL, false))
        safe_point_job_done = false;
}

bool ruby_tracer_postpone(void (*job)(void *), void *data, bool stopped)
{
    const struct ruby_api *api = &ruby_tracer.api;
    /* Ruby finds the job queue through the calling thread's context: a
     * thread of the VM's only (a signal handler's rule too). */
    if (!ruby_tracer_vm_running() ||
        !(api->ruby_native_thread_p ? api->ruby_native_thread_p() : api->ruby_thread_has_gvl_p()) ||
        !api->rb_postponed_job_register_one(0, job, data))
        return false;
    /* Ruby flags the calling thread's context only, and GDB's may be blocked
     * in IO for long: the next allocation recorded, on a thread running Ruby
     * code, asks again (begin_epoch, which a generation no GC has forces). */
    if (stopped && ruby_recording && ruby_tracer.postponed_count < RUBY_POSTPONED_MAX) {
        ruby_tracer.postponed[ruby_tracer.postponed_count++] = (struct ruby_postponed){ job, data };
        ruby_tracer.epoch_gc_now = RUBY_GENERATION_UNKNOWN;
    }
    return true;
}

/* A job asked for by a thread that is not the VM's (serve.c's): Ruby's queue
 * is reached through a VM thread's context, so the next allocation recorded
 * registers it (begin_epoch), as for GDB's. One at a time. */
static void (*foreign_job)(void *);
static void *foreign_data;

bool ruby_tracer_postpone_from_outside(void (*job)(void *), void *data)
{
    if (!ruby_tracer_vm_running() || !ruby_recording)
        return false;
    void (*pending)(void *) = __atomic_load_n(&foreign_job, __ATOMIC_ACQUIRE);
    if (pending != job) {
        if (pending)
            return false;
        foreign_data = data;
        if (!__atomic_compare_exchange_n(&foreign_job, &pending, job, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return false;
    }
    /* A GC generation no GC has: the next record begins an epoch. A hook's
     * begin_epoch may overwrite it with the real one first: the caller asks
     * again while it waits. */
    __atomic_store_n(&ruby_tracer.epoch_gc_now, RUBY_GENERATION_UNKNOWN, __ATOMIC_RELAXED);
    return true;
}

/* Sampling: each thread counts down a random interval averaging `sample`
 * (uniform on 1 .. 2*sample-1), so a loop's period cannot alias with it. */
static __thread struct { uint64_t rng; uint32_t countdown; } sampler
    __attribute__((tls_model("initial-exec")));

static bool sample_this(unsigned rate)
{
    if (sampler.countdown > 1) {
        sampler.countdown--;
        return false;
    }
    if (!sampler.rng)
        sampler.rng = (uint64_t)(uintptr_t)&sampler * 0x9E3779B97F4A7C15ull | 1;
    sampler.rng ^= sampler.rng << 13;   /* xorshift64 */
    sampler.rng ^= sampler.rng >> 7;
    sampler.rng ^= sampler.rng << 17;
    sampler.countdown = 1 + (uint32_t)(sampler.rng % (2 * (uint64_t)rate - 1));
    return true;
}

/* The tracer's lock, taken in a hook. With one Ractor every allocation holds
 * the GVL, and hooks never overlap; Ractors allocate in parallel. */
static inline __attribute__((always_inline)) void lock_in_hook(struct ruby_tracer *t)
{
    if (__builtin_expect(__atomic_load_n(t->api.ruby_single_main_ractor, __ATOMIC_RELAXED) != 0, 1))
        spin_lock_serialized(&t->lock);
    else
        spin_lock(&t->lock);
}

/* Keep the name of a new origin's class, for a reader of a core. A class
 * named later (an anonymous one, then a constant) keeps no name there. */
static void name_origin(struct ruby_tracer *t, uint32_t origin, VALUE klass)
{
    if (!pages_grow((void **)&t->origin_names, &t->origin_names_bytes, ((size_t)origin + 1) * sizeof *t->origin_names,
                    4096))
        return;
    unsigned type = klass ? (unsigned)(((const struct ruby_basic *)klass)->flags & RUBY_T_MASK) : RUBY_T_NONE;
    size_t len = 0;
    const char *path = type == RUBY_T_CLASS || type == RUBY_T_MODULE ? ruby_class_path(&t->api, NULL, klass, &len)
                                                                      : NULL;
    uint32_t name = path ? strings_put(&t->class_names, path, len) : STRING_NONE;
    t->origin_names[origin] = name == STRING_NONE ? 0 : name + 1;
}

/* `n` more objects recorded at `origin` (with the lock held); lost, as
 * records are, when there is no memory for the count. */
static void count_allocs(struct ruby_tracer *t, uint32_t origin, uint64_t n)
{
    if ((size_t)origin * sizeof *t->origin_allocs < t->origin_allocs_bytes ||
        pages_grow((void **)&t->origin_allocs, &t->origin_allocs_bytes,
                   ((size_t)origin + 1) * sizeof *t->origin_allocs, 4096))
        t->origin_allocs[origin] += n;
}

/* An entry of the pc cache filled (with the lock held): the count the old
 * entry held goes to its origin first. */
static void pc_cache_fill(struct ruby_tracer *t, struct ruby_pc_cache_entry *slot, struct ruby_pc_cache_entry entry)
{
    if (slot->allocs && slot->origin < t->origins.count)
        count_allocs(t, slot->origin, slot->allocs);
    *slot = entry;
    unsigned n = t->pc_cache_filled_count;
    if (n < RUBY_PC_CACHE_FILLED_MAX)
        t->pc_cache_filled[n] = (uint16_t)(slot - t->pc_cache);
    if (n <= RUBY_PC_CACHE_FILLED_MAX)
        t->pc_cache_filled_count = n + 1;
}

/* Every entry of the pc cache emptied (with the lock held): marked stale,
 * which no record's key matches, its origin kept for new_origin to check. */
static void pc_cache_clear(struct ruby_tracer *t)
{
    unsigned n = t->pc_cache_filled_count;
    if (n > RUBY_PC_CACHE_FILLED_MAX)
        for (unsigned i = 0; i < RUBY_PC_CACHE_SIZE; i++) {
            if (t->pc_cache[i].pc)   /* (a page never filled stays untouched) */
                t->pc_cache[i].klass |= RUBY_PC_STALE;
        }
    else
        for (unsigned i = 0; i < n; i++)
            t->pc_cache[t->pc_cache_filled[i]].klass |= RUBY_PC_STALE;
    t->pc_cache_filled_count = 0;
}

/* The stale entry's origin when it is what interning this allocation's frame
 * (depth 0 or 1) and class would give again: the same file, line and class
 * read back by id, instead of three hash lookups (a new epoch makes every
 * line of a program take this way again). INTERN_NONE otherwise. */
static uint32_t stale_origin_again(struct ruby_tracer *t, const struct ruby_pc_cache_entry *stale,
                                   const struct ruby_frame *frames, int depth, VALUE klass)
{
    if (stale->klass != (klass | RUBY_PC_STALE) || stale->origin >= t->origins.count || depth > 1)
        return INTERN_NONE;
    const struct intern_tuple *origin = intern_get(&t->origins, stale->origin);
    uint32_t site = (uint32_t)origin->a;
    if (origin->b != klass || site >= t->sites.frames.count || sites_caller(&t->sites, site) != SITE_NONE)
        return INTERN_NONE;
    const char *file = depth ? frames[0].file : "<internal>";
    uint32_t line = depth ? (uint32_t)frames[0].line : 0;
    if (sites_line(&t->sites, site) != line || strcmp(sites_file(&t->sites, site), file) != 0)
        return INTERN_NONE;
    return stale->origin;
}

/* The slow path of a record: walk the stack, intern the site and the origin.
 * Returns holding the lock. Apart so that the hook's fast path does not set
 * up the 1 KiB frame buffer. */
static __attribute__((noinline)) uint32_t new_origin(struct ruby_tracer *t, const void *pc, const void *iseq,
                                                     VALUE klass,
                                                     struct ruby_pc_cache_entry *cached)
{
    struct ruby_frame frames[RUBY_MAX_FRAMES];
    int depth = ruby_site_capture(t, frames);
    if (depth > 0 && !safe_point_job_done) {
        /* The first allocation made by Ruby code: the VM is up. */
        safe_point_job_done = true;
        t->api.rb_postponed_job_register_one(0, at_safe_point, NULL);
    }
    lock_in_hook(t);
    bool key_stale = cached->pc == pc && cached->iseq == iseq && pc;
    uint32_t origin = key_stale ? stale_origin_again(t, cached, frames, depth, klass) : INTERN_NONE;
    if (origin != INTERN_NONE) {
        t->origins_again++;
    } else {
        uint32_t site = SITE_NONE;
        if (depth == 0)
            site = sites_intern(&t->sites, "<internal>", 0, SITE_NONE);
        for (int i = depth; i-- > 0;)
            site = sites_intern(&t->sites, frames[i].file, (uint32_t)frames[i].line, site);
        size_t known = t->origins.count;
        origin = site == SITE_NONE ? INTERN_NONE : intern_put(&t->origins, site, klass);
        if (t->origins.count > known)
            name_origin(t, origin, klass);
    }
    /* Not line 0: a frame that has run nothing yet, whose iseq may still get
     * its path (the main script's goes from "<main>" to "ruby" to its name). */
    bool no_frame = pc == RUBY_PC_KEY_NO_FRAME;
    if (origin != INTERN_NONE && (no_frame ? depth == 0 : pc && depth > 0 && frames[0].line != 0))
        pc_cache_fill(t, cached, (struct ruby_pc_cache_entry){ pc, iseq, klass, origin, 0 });
    return origin;
}

/* A new epoch in GC generation `gc` (with the lock held). The pc cache's
 * origins were the last epoch's: it starts empty. */
static __attribute__((noinline)) uint32_t begin_epoch(struct ruby_tracer *t, size_t gc)
{
    uint32_t e = t->epoch + 1;
    if (e > RUBY_EPOCH_MAX)   /* 16M epochs: start over rather than wrap into type bits */
        e = 1;
    if (pages_grow((void **)&t->epoch_gc, &t->epoch_gc_bytes, ((size_t)e + 1) * sizeof *t->epoch_gc, 4096))
        t->epoch_gc[e] = gc;
    else if (t->epoch_gc && (size_t)e * sizeof *t->epoch_gc < t->epoch_gc_bytes)
        t->epoch_gc[e] = RUBY_GENERATION_UNKNOWN;   /* (after a wrap: not an old epoch's) */
    t->epoch_gc_now = gc;
    t->epoch_aux = RUBY_AUX(0, e);
    for (unsigned i = 0; i < t->postponed_count; i++)   /* asked for by GDB: this thread runs Ruby code */
        t->api.rb_postponed_job_register_one(0, t->postponed[i].job, t->postponed[i].data);
    t->postponed_count = 0;
    if (__atomic_load_n(&foreign_job, __ATOMIC_RELAXED)) {
        void (*job)(void *) = __atomic_exchange_n(&foreign_job, NULL, __ATOMIC_ACQ_REL);
        if (job)
            t->api.rb_postponed_job_register_one(0, job, foreign_data);
    }
    __atomic_store_n(&t->epoch, e, __ATOMIC_RELAXED);
    pc_cache_clear(t);
    return e;
}

/* Where the pc cache keeps an instruction's origin for objects of `klass`
 * (hashed with the class: one line often makes objects of several). */
static inline struct ruby_pc_cache_entry *pc_cache_slot(struct ruby_tracer *t, const void *pc, VALUE klass)
{
    _Static_assert((RUBY_PC_CACHE_SIZE & (RUBY_PC_CACHE_SIZE - 1)) == 0, "a power of two");
    /* A multiplication: shifts and xors of pc ^ class (no multiplication's
     * latency before the load) left rubocop 12-15% more misses, each a new
     * origin's 650 instructions. */
    uint64_t mixed = ((uintptr_t)pc ^ (uintptr_t)klass) * 0x9E3779B97F4A7C15ull;
    return &t->pc_cache[mixed >> (64 - __builtin_ctz(RUBY_PC_CACHE_SIZE))];
}

/* The GC's count, in place when it was found. */
static inline size_t gc_count_now(const struct ruby_tracer *t)
{
    return t->gc_count_word ? *t->gc_count_word : t->api.rb_gc_count();
}

/* When the fast path may run: recording every object, each at its nearest
 * frame's line, with the GC's count found. */
static void choose_path(struct ruby_tracer *t)
{
    const struct ruby_config *c = &t->config;
    bool fast = ruby_recording && c->sample == 1 && c->site == RUBY_SITE_NEAREST && c->frames == 1 &&
                ruby_site_ec_tls_known;
    t->fast_ec_tls_offset = ruby_site_ec_tls_offset;
    __atomic_store_n(&t->fast_gc_count, fast ? t->gc_count_word : NULL, __ATOMIC_RELAXED);
}

/* Any record, the whole way, after reentry_enter. */
static __attribute__((noinline)) VALUE record_entered(VALUE obj)
{
    struct ruby_tracer *t = &ruby_tracer;
    if (__builtin_expect(!t->gc_count_looked, 0) && *t->api.ruby_current_vm_ptr) {
        t->gc_count_looked = true;
        t->gc_count_word = ruby_gc_count_locate(&t->api);
        choose_path(t);
    }
    unsigned rate = t->config.sample;
    if (rate > 1 && !sample_this(rate)) {
        /* Not sampled, but an older record at this address is now dead. */
        lock_in_hook(t);
        slot_map_remove(&t->objects, obj);
        spin_unlock(&t->lock);
        reentry_leave();
        return obj;
    }
    const struct ruby_basic *basic = (const struct ruby_basic *)obj;
    unsigned type = (unsigned)(basic->flags & RUBY_T_MASK);
    VALUE klass = type == RUBY_T_IMEMO ? 0 : basic->klass;  /* imemo: payload */
    uint32_t origin;

    const void *iseq = NULL;
    const void *pc = ruby_site_pc_key(t, &iseq);
    size_t gc_count = gc_count_now(t);
    struct ruby_pc_cache_entry *cached = pc_cache_slot(t, pc, klass);
    if (pc) {
        lock_in_hook(t);
        if (__builtin_expect(gc_count != t->epoch_gc_now, 0))
            begin_epoch(t, gc_count);
        if (__builtin_expect(cached->pc == pc && cached->iseq == iseq && cached->klass == klass, 1)) {
            origin = cached->origin;
            cached->allocs++;
            goto store;
        }
        spin_unlock(&t->lock);
    }

    origin = new_origin(t, pc, iseq, klass, cached);   /* takes the lock */
    if (origin != INTERN_NONE)
        count_allocs(t, origin, 1);
    /* (A new epoch empties the cache, this entry with the rest.) */
    if (__builtin_expect(gc_count != t->epoch_gc_now, 0))
        begin_epoch(t, gc_count);
store:
    /* An address already tracked means its previous object died: replaced. */
    if (origin == INTERN_NONE ||
        slot_map_put_near(&t->objects, obj, origin, t->epoch_aux | type) == SLOT_PUT_NO_MEMORY)
        t->dropped++;
    spin_unlock(&t->lock);
    reentry_leave();
    return obj;
}

static __attribute__((noinline)) VALUE record_slow(VALUE obj)
{
    struct ruby_tracer *t = &ruby_tracer;
    if (!__atomic_load_n(&ruby_recording, __ATOMIC_RELAXED) || !obj || !reentry_enter())
        return obj;
    /* Sampling's common case, not sampled, kept short: the countdown, and the
     * record of an older object at this address forgotten (it died), in the
     * page used last when it is there: no stack walk for an object not kept. */
    if (t->config.sample > 1 && sampler.countdown > 1 &&
        __atomic_load_n(t->api.ruby_single_main_ractor, __ATOMIC_RELAXED)) {
        sampler.countdown--;
        spin_lock_serialized(&t->lock);
        slot_map_remove_near(&t->objects, obj);
        spin_unlock(&t->lock);
        reentry_leave();
        return obj;
    }
    return record_entered(obj);
}

/* The common record: the nearest Ruby frame's instruction again (the pc
 * cache names its origin), that frame running or a C method's caller, in
 * this GC generation, with one Ractor, in the slot map's page used last. It
 * makes no call of its own, only a tail call to the whole way for anything
 * else: the GC's count is read in place, not through rb_gc_count(). Inlined
 * into each hook after its call of the real allocator, whose one saved
 * register then serves both: a jump and a saved register fewer than a tail
 * call to it. (The figures: doc/benchmarks.md and the commits.) */
static inline __attribute__((always_inline)) VALUE record(VALUE obj)
{
    struct ruby_tracer *t = &ruby_tracer;
    const size_t *gc_word = __atomic_load_n(&t->fast_gc_count, __ATOMIC_RELAXED);
    if (__builtin_expect(!gc_word, 0))
        return record_slow(obj);
    /* (ruby_site_ec_tls_known, with the fast path.) */
    const char *ec = ruby_site_tls_word(t->fast_ec_tls_offset);
    uintptr_t below;
    const char *frame = ruby_site_near_frame_of(ec, &below);
    /* (No page is at 0: an obj of 0 goes the whole way, where it is let go.) */
    struct slot_page *page = t->objects.last;
    if (__builtin_expect(!frame || !__atomic_load_n(t->api.ruby_single_main_ractor, __ATOMIC_RELAXED) ||
                             page->base != (obj & ~(RUBY_HEAP_PAGE_ALIGN - 1)),
                         0))
        return record_slow(obj);
    if (!reentry_enter())
        return obj;
    const struct ruby_basic *basic = (const struct ruby_basic *)obj;
    unsigned type = (unsigned)(basic->flags & RUBY_T_MASK);
    VALUE klass = type == RUBY_T_IMEMO ? 0 : basic->klass;
    const void *iseq;
    const void *pc = ruby_site_frame_key(frame, below, &iseq);
    size_t gc_count = *gc_word;
    struct ruby_pc_cache_entry *cached = pc_cache_slot(t, pc, klass);
    __asm__("" : "+r"(cached));   /* one register for the entry: GCC derived its address twice */
    spin_lock_serialized(&t->lock);
    if (__builtin_expect(cached->pc != pc || cached->iseq != iseq || cached->klass != klass ||
                             gc_count != t->epoch_gc_now,
                         0)) {
        spin_unlock(&t->lock);
        return record_entered(obj);
    }
    slot_map_put_in_fixed(&t->objects, page, obj, cached->origin, t->epoch_aux | type, RUBY_HEAP_PAGE_ALIGN,
                          RUBY_SLOT_SIZE);
    cached->allocs++;
    spin_unlock(&t->lock);
    reentry_leave();
    return obj;
}

/* --- heap pages given back ------------------------------------------------
 * Ruby 3.1's GC munmaps an empty heap page (gc.c, heap_page_body_free), and a
 * later mmap or dlopen may put anything at that address. The records of a
 * page die with it, so a report only ever reads slots of pages the VM owns.
 * Only the GC frees heap pages, and it holds the GVL: a munmap without it is
 * none of the tracer's business. Installed with the allocation hooks and kept
 * after memprof_stop, as long as there are records. */
static int hook_munmap(void *addr, size_t length)
{
    struct ruby_tracer *t = &ruby_tracer;
    if (!ruby_thread_holds_gvl(&t->api))
        return next_munmap(addr, length);
    lock_in_hook(t);
    slot_map_drop_pages(&t->objects, (uintptr_t)addr, (uintptr_t)addr + length);
    int rc = next_munmap(addr, length);
    spin_unlock(&t->lock);
    return rc;
}
_Static_assert(__builtin_types_compatible_p(munmap_fn, __typeof__(munmap)), "munmap's prototype");

static void register_atfork(void)
{
    pthread_atfork(NULL, NULL, ruby_tracer_after_fork);
}

enum memprof_status ruby_tracer_start(void (*at_exit)(void))
{
    static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
    if (!ruby_tracer_available())
        return MEMPROF_NOT_RUBY;
    if (ruby_recording)
        return MEMPROF_OK;
    exit_callback = at_exit;
    pthread_once(&atfork_once, register_atfork);
    ruby_site_configure();
    /* (munmap's last: installed already when records were kept since.) */
    if (got_hooks_install(hooks, munmap_hook->installed ? RECORDING_HOOK_COUNT : HOOK_COUNT) != 0)
        return MEMPROF_HOOK_FAILED;
    wrap_allocators();
    /* Every page of the pc cache is written within the VM's start (ruby -e 1
     * fills 4,000 entries, hashed all over it): mapped in one call. */
    pages_fill(ruby_tracer.pc_cache, sizeof ruby_tracer.pc_cache);
    __atomic_store_n(&ruby_recording, true, __ATOMIC_RELEASE);
    choose_path(&ruby_tracer);
    /* Already inside a running VM (loaded by require or from GDB): the
     * classes it made keep BasicObject's allocator as it was, until the job
     * (which Memprof.start runs at once). */
    if (ruby_tracer_vm_running()) {
        classes_to_wrap = true;
        ask_for_safe_point();
    }
    return MEMPROF_OK;
}

/* False when recording was stopped already. */
static bool stop_recording(void)
{
    if (!ruby_recording)
        return false;
    __atomic_store_n(&ruby_recording, false, __ATOMIC_RELEASE);
    choose_path(&ruby_tracer);
    ruby_tracer.gc_count_at_stop = ruby_tracer.api.rb_gc_count();
    return true;
}

void ruby_tracer_stop(void)
{
    if (!stop_recording())
        return;
    unwrap_allocators();
    got_hooks_remove(hooks, RECORDING_HOOK_COUNT);
}

void ruby_tracer_stop_at_exit(void)
{
    stop_recording();
}

/* The objects' table given up (detach, reset), from GDB with the process
 * stopped. A thread stopped inside `record` may have read the table's page
 * before taking the lock (a plain store: hooks are serialized by the GVL),
 * and write into it when it runs on: the table's memory is kept until the
 * next one is given up, long after that thread has left its hook. */
static struct slot_map retired_objects;

static void retire_objects(struct ruby_tracer *t)
{
    if (retired_objects.slot_size)
        slot_map_clear(&retired_objects);
    retired_objects = t->objects;
    slot_map_init(&t->objects, RUBY_HEAP_PAGE_ALIGN, RUBY_SLOT_SIZE);
}

enum memprof_status ruby_tracer_detach(void)
{
    /* A try-lock: called from GDB with the process stopped, where a thread
     * stopped inside a hook may hold the lock for good (a spin there held a
     * server stopped until GDB was interrupted). Busy: nothing changed. */
    if (!spin_trylock_report(&ruby_tracer.lock))
        return MEMPROF_BUSY;
    ruby_tracer_stop();
    /* Without the page watch no record can be trusted once the process runs
     * on: the table is forgotten with it. */
    if (munmap_hook->installed) {
        retire_objects(&ruby_tracer);
        spin_unlock(&ruby_tracer.lock);
        got_hook_remove(munmap_hook);
    } else {
        spin_unlock(&ruby_tracer.lock);
    }
    return MEMPROF_OK;
}

/* The GC marks every word between its own frame and the stack's base that
 * looks like an object (it is conservative there). The words deeper calls
 * left below this frame (the program's own work, earlier) would be read as
 * the GC's frames' unset slots, and keep garbage alive: zeroed first, for
 * rb_gc's frames to take. */
static __attribute__((noinline)) void scrub_stack(void)
{
    volatile char below[64 * 1024];
    memset((char *)below, 0, sizeof below);
    __asm__ volatile("" : : "r"(below) : "memory");
}

enum ruby_gc_state ruby_tracer_collect(void)
{
    struct ruby_tracer *t = &ruby_tracer;
    if (!ruby_tracer_available() || !ruby_tracer_vm_running())
        return RUBY_GC_NOT_HERE;
    if (!t->api.rb_gc)
        return RUBY_GC_NONE;
    if (reentry_inside() || t->api.rb_during_gc() || !ruby_thread_holds_gvl(&t->api))
        return RUBY_GC_NOT_HERE;
    size_t before = t->api.rb_gc_count();
    scrub_stack();
    t->api.rb_gc();   /* (a GC the program disabled stays so: rb_gc is not GC.start) */
    return t->api.rb_gc_count() != before ? RUBY_GC_RAN : RUBY_GC_DISABLED;
}

bool ruby_tracer_running(void)
{
    return ruby_recording;
}

enum memprof_status ruby_tracer_reset(void)
{
    struct ruby_tracer *t = &ruby_tracer;
    if (!ruby_tracer_available())
        return MEMPROF_NOT_RUBY;
    if (!spin_trylock_report(&t->lock))
        return MEMPROF_BUSY;
    retire_objects(t);
    pc_cache_clear(t);
    intern_free(&t->origins);
    sites_free(&t->sites);
    strings_free(&t->class_names);
    pages_free(t->origin_names, t->origin_names_bytes);
    t->origin_names = NULL;
    t->origin_names_bytes = 0;
    pages_free(t->origin_allocs, t->origin_allocs_bytes);
    t->origin_allocs = NULL;
    t->origin_allocs_bytes = 0;
    pages_free(t->allocs_base, t->allocs_base_bytes);
    t->allocs_base = NULL;
    t->allocs_base_bytes = 0;
    t->allocs_base_epoch = 0;
    for (size_t i = 0; i < RUBY_PC_CACHE_SIZE; i++)
        t->pc_cache[i].allocs = 0;   /* their origins are gone */
    t->dropped = 0;
    spin_unlock(&t->lock);
    return MEMPROF_OK;
}

void ruby_tracer_config(struct ruby_config *c)
{
    *c = ruby_tracer.config;
}

enum memprof_status ruby_tracer_configure(const struct ruby_config *c)
{
    struct ruby_tracer *t = &ruby_tracer;
    if ((c->site != RUBY_SITE_NEAREST && c->site != RUBY_SITE_USER) || c->frames < 1 ||
        c->frames > RUBY_MAX_FRAMES || c->sample < 1 || c->sample > (1u << 30))
        return MEMPROF_BAD_ARGUMENT;
    if (!ruby_tracer_available())
        return MEMPROF_NOT_RUBY;
    if (!spin_trylock_report(&t->lock))
        return MEMPROF_BUSY;
    bool new_rate = c->sample != t->config.sample;
    t->config = *c;
    choose_path(t);
    pc_cache_clear(t);
    spin_unlock(&t->lock);
    return new_rate ? ruby_tracer_reset() : MEMPROF_OK;
}

/* Every origin's count as of now kept in allocs_base (with the lock held):
 * the pc cache's counts moved to their origins first. */
static void snapshot_allocs(struct ruby_tracer *t, uint32_t epoch)
{
    for (size_t i = 0; i < RUBY_PC_CACHE_SIZE; i++) {
        struct ruby_pc_cache_entry *e = &t->pc_cache[i];
        if (e->allocs && e->origin < t->origins.count)
            count_allocs(t, e->origin, e->allocs);
        e->allocs = 0;
    }
    size_t n = t->origin_allocs_bytes;
    if (n > t->allocs_base_bytes && !pages_grow((void **)&t->allocs_base, &t->allocs_base_bytes, n, 4096)) {
        t->allocs_base_epoch = 0;   /* no base: allocated counts are since recording started */
        return;
    }
    memcpy(t->allocs_base, t->origin_allocs, n);
    memset((char *)t->allocs_base + n, 0, t->allocs_base_bytes - n);
    t->allocs_base_epoch = epoch;
}

uint32_t ruby_tracer_new_epoch(void)
{
    struct ruby_tracer *t = &ruby_tracer;
    size_t gc = ruby_tracer_available() ? t->api.rb_gc_count() : 0;
    spin_lock(&t->lock);
    uint32_t e = begin_epoch(t, gc);
    snapshot_allocs(t, e);
    spin_unlock(&t->lock);
    return e;
}

void ruby_tracer_usage(unsigned long *objects, unsigned long *bytes)
{
    const struct ruby_tracer *t = &ruby_tracer;
    *objects = t->objects.count;
    *bytes = slot_map_bytes(&t->objects) + intern_bytes(&t->origins) + sites_bytes(&t->sites) +
             strings_bytes(&t->class_names) + t->origin_names_bytes + t->origin_allocs_bytes + t->allocs_base_bytes;
}

void ruby_tracer_after_fork(void)
{
    /* Only the forking thread survives: a lock another thread held is void. */
    spin_reset(&ruby_tracer.lock);
}
