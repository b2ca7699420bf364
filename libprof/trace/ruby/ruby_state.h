/* State shared by the tracer's parts: hooks (ruby.c), where an allocation is
 * attributed (ruby_site.c), following compaction (ruby_compact.c) and the
 * report (ruby_report.c). */
#ifndef MEMPROF_TRACE_RUBY_STATE_H
#define MEMPROF_TRACE_RUBY_STATE_H
#include "ruby.h"
#include "ruby_abi.h"
#include "../../store/slot_map.h"
#include "../../store/intern.h"
#include "../../store/sites.h"
#include "../../util/spinlock.h"
#include "../../arch/cpu.h"

/* A record's aux word: the object's type, and the epoch it was made in.
 * Epochs advance at each Memprof.track and at the first allocation after
 * each GC, so an epoch also names the GC generation (rb_gc_count() at the
 * allocation, as ObjectSpace's "generation"): epoch_gc maps one to the other. */
#define RUBY_AUX(type, epoch) ((uint32_t)(type) | (uint32_t)(epoch) << 8)
#define RUBY_AUX_TYPE(aux) ((aux) & RUBY_T_MASK)
#define RUBY_AUX_EPOCH(aux) ((aux) >> 8)
#define RUBY_EPOCH_MAX ((1u << 24) - 1)

/* The origin last recorded at an instruction: most allocations come from a
 * few instructions, and their pc names the site without computing a line.
 * The nearest Ruby frame's pc (a C method may run above it) and iseq: one
 * iseq's instructions can be freed and their memory given to another's
 * without a GC starting (seen with rubocop). Valid in the epoch it was made
 * in: a new epoch (each GC) empties the cache. 32 bytes: an index is a shift. */
struct ruby_pc_cache_entry {
    const void *pc;
    const void *iseq;
    VALUE klass;
    uint32_t origin;
    /* Objects recorded through this entry not yet added to the origin's
     * count (origin_allocs): one add on the line the record reads anyway.
     * Moved there when the entry is filled again, read as they are by a report. */
    uint32_t allocs;
};
_Static_assert(sizeof(struct ruby_pc_cache_entry) == 32, "a pc cache entry is 32 bytes");
/* Set in the klass of an entry a new epoch emptied (a class is never at an
 * odd address): no key matches it, and its origin may be found again. */
#define RUBY_PC_STALE ((VALUE)1)
/* 8192: rubocop over 20 files uses 44,000 origins, and 1024 entries left it
 * 133,000 refills (88,000 of them a live entry of another key), 8192 100,000. */
#define RUBY_PC_CACHE_SIZE 8192
/* The entries filled in an epoch, listed to be emptied one by one when a new
 * epoch begins (most programs fill a few between GCs); past this many, the
 * whole cache is. */
#define RUBY_PC_CACHE_FILLED_MAX 2048
/* Postponed jobs a debugger may ask for at once (ruby_tracer_postpone). */
#define RUBY_POSTPONED_MAX 4

struct ruby_tracer {
    struct ruby_api api;
    struct ruby_config config;    /* how allocations are attributed and sampled */
    spinlock_t lock;              /* guards everything below */
    struct slot_map objects;      /* address -> origin, type, epoch */
    struct site_table sites;
    struct intern_table origins;  /* (site, class at allocation) */
    /* [origin]: its class's name when the origin was made, + 1 (0: none),
     * in class_names: for a reader of a core, which cannot ask the VM. */
    uint32_t *origin_names;
    size_t origin_names_bytes;
    /* [origin]: objects recorded there since recording started (the pc
     * cache's entries hold more, not yet added). */
    uint64_t *origin_allocs;
    size_t origin_allocs_bytes;
    /* The counts when epoch allocs_base_epoch began (ruby_tracer_new_epoch):
     * a report of that epoch's objects counts those made since. */
    uint64_t *allocs_base;
    size_t allocs_base_bytes;
    uint32_t allocs_base_epoch;
    struct string_pool class_names;
    unsigned long dropped;        /* records lost to memory exhaustion */
    unsigned long compactions;    /* GC compactions followed */
    unsigned long unfollowed;     /* compactions that could not be followed */
    uint32_t epoch;               /* current epoch (Memprof.track, and each GC) */
    uint32_t epoch_aux;           /* RUBY_AUX(0, epoch): a record's aux but its type */
    size_t epoch_gc_now;          /* rb_gc_count() when the epoch began */
    uint64_t *epoch_gc;           /* [epoch]: rb_gc_count() in that epoch */
    size_t epoch_gc_bytes;
    size_t gc_count_at_stop;      /* rb_gc_count() when recording stopped */
    struct ruby_pc_cache_entry pc_cache[RUBY_PC_CACHE_SIZE];
    uint16_t pc_cache_filled[RUBY_PC_CACHE_FILLED_MAX];
    unsigned pc_cache_filled_count;   /* > RUBY_PC_CACHE_FILLED_MAX: too many to list */
    unsigned long origins_again;  /* new_origin's answers read back from a stale entry */
    /* Files whose rows reports leave out: memprof's own Ruby API and the
     * Fiddle code it calls, which allocate while a report is asked for.
     * NUL-separated. */
    char hidden_files[4096];
    size_t hidden_len;
    /* The GC's count in place (ruby_gc_count_locate), once the VM runs;
     * NULL: not found, or not looked for yet (gc_count_looked). */
    const size_t *gc_count_word;
    bool gc_count_looked;
    /* gc_count_word while the record's fast path may run (every object
     * recorded, at its nearest frame's line), else NULL. */
    const size_t *fast_gc_count;
    intptr_t fast_ec_tls_offset;  /* ruby_site_ec_tls_offset, beside it */
    /* Postponed jobs asked for with the process stopped (GDB), asked again
     * by the next allocation recorded, whose thread runs Ruby code. */
    struct ruby_postponed {
        void (*job)(void *);
        void *data;
    } postponed[RUBY_POSTPONED_MAX];
    unsigned postponed_count;
};

extern struct ruby_tracer ruby_tracer;
/* Recording (memprof_start): read by the hooks, and by a reader of a core
 * through memprof_tables. */
extern bool ruby_recording;

/* The GC generation of an epoch, RUBY_GENERATION_UNKNOWN when its entry
 * could not be kept. Epoch 0 is the start: generation 0, before any GC. */
#define RUBY_GENERATION_UNKNOWN UINT64_MAX
static inline uint64_t ruby_epoch_generation(const struct ruby_tracer *t, uint32_t epoch)
{
    if (epoch == 0)
        return 0;
    return t->epoch_gc && (size_t)epoch * sizeof *t->epoch_gc < t->epoch_gc_bytes ? t->epoch_gc[epoch]
                                                                                 : RUBY_GENERATION_UNKNOWN;
}

/* One frame of an allocation's Ruby stack, as captured in the hook: `file`
 * belongs to the VM and is copied when interned. */
struct ruby_frame { const char *file; int line; };
#define RUBY_MAX_FRAMES 64

/* The frames an allocation is attributed to, innermost first, per the
 * configured mode; 0 before any Ruby code runs. Calls into the VM, never
 * allocates; called without the lock. */
int ruby_site_capture(const struct ruby_tracer *t, struct ruby_frame *frames);
/* The nearest Ruby frame of the context `ec` (NULL: none), or NULL. *top
 * tells whether it is the running frame (the VM itself allocating, not a C
 * method). *none (when not NULL) is set when the whole stack was read and
 * holds no Ruby frame: the VM's own start, where an allocation's site is
 * "<internal>". `ec` must be live: this thread's, while the VM allocates an
 * object, or as ruby_thread_live_ec found it. */
const char *ruby_site_nearest_frame(const char *ec, bool *top, bool *none);
/* Is the control frame at `cfp` a Ruby frame (it has a line), not a C
 * method's? Its ep[0] holds the frame's flags. */
static inline bool ruby_cfp_is_ruby(const char *cfp)
{
    const VALUE *ep = *(const VALUE *const *)(cfp + RUBY_CFP_EP_OFFSET);
    return ep && !(ep[0] & RUBY_FRAME_FLAG_CFRAME);
}

/* Find ruby_current_ec's place in static TLS (once); then this thread's
 * execution context, or NULL (not a Ruby thread, or a VM whose TLS is not in
 * the static block). Inline: every record asks. */
void ruby_site_find_ec(void);
extern intptr_t ruby_site_ec_tls_offset;
extern bool ruby_site_ec_tls_known;
/* The word at `offset` in this thread's static TLS. */
static inline const char *ruby_site_tls_word(intptr_t offset)
{
    return cpu_tls_word(offset);
}
static inline const char *ruby_site_current_ec(void)
{
    return ruby_site_ec_tls_known
               ? ruby_site_tls_word(ruby_site_ec_tls_offset)
               : NULL;
}

/* The saved pc of the running frame when it is a Ruby frame, else NULL. */
static inline const VALUE **ruby_site_running_pc(void)
{
    const char *ec = ruby_site_current_ec();
    const char *cfp = __builtin_expect(ec != NULL, 1) ? *(const char *const *)(ec + RUBY_EC_CFP_OFFSET) : NULL;
    if (__builtin_expect(!cfp || !ruby_cfp_is_ruby(cfp), 0))
        return NULL;
    const VALUE **pc = (const VALUE **)cfp;
    return __builtin_expect(*pc != NULL, 1) ? pc : NULL;
}

/* The common cases of ruby_site_nearest_frame, inline: the running frame of
 * `ec` when it is a Ruby frame with a pc (*below 0), or the frame right below
 * a C method's, a C method called from Ruby code (*below 1); else NULL. */
static inline const char *ruby_site_near_frame_of(const char *ec, uintptr_t *below)
{
    const char *cfp = __builtin_expect(ec != NULL, 1) ? *(const char *const *)(ec + RUBY_EC_CFP_OFFSET) : NULL;
    if (__builtin_expect(!cfp, 0))
        return NULL;
    *below = !ruby_cfp_is_ruby(cfp);
    if (*below) {
        const char *stack = *(const char *const *)(ec + RUBY_EC_VM_STACK_OFFSET);
        size_t words = *(const size_t *)(ec + RUBY_EC_VM_STACK_SIZE_OFFSET);
        cfp += RUBY_CFP_SIZE;
        if (cfp < stack || words > ((size_t)1 << 30) || cfp + RUBY_CFP_SIZE > stack + words * sizeof(VALUE) ||
            !ruby_cfp_is_ruby(cfp))
            return NULL;
    }
    return *(const VALUE *const *)cfp ? cfp : NULL;
}

/* The pc cache's key of the nearest Ruby frame `frame`: its pc, tagged when
 * a C method runs above it (`below`), and its iseq. A caller's pc points past
 * its call, the running frame's at the instruction allocating: the same
 * address names different lines. */
static inline const void *ruby_site_frame_key(const char *frame, uintptr_t below, const void **iseq)
{
    *iseq = *(const void *const *)(frame + RUBY_CFP_ISEQ_OFFSET);
    return (const void *)(*(const uintptr_t *)frame | below);
}

/* The pc cache's key of an allocation with no Ruby frame on the stack
 * (4,500 of `ruby -e 1`'s 57,000 objects, as the VM starts): an origin per
 * class, "<internal>". No pc is 2 (pcs are words; a C method's caller's is
 * tagged with 1). */
#define RUBY_PC_KEY_NO_FRAME ((const void *)2)

/* A key for the pc cache when the site is the nearest Ruby frame (see
 * ruby_site_frame_key), or RUBY_PC_KEY_NO_FRAME. NULL otherwise. */
static inline const void *ruby_site_pc_key(const struct ruby_tracer *t, const void **iseq)
{
    if (t->config.site != RUBY_SITE_NEAREST || t->config.frames != 1)
        return NULL;
    /* Most allocations are the running Ruby frame's or its C method's: no
     * walk for those. */
    uintptr_t below;
    const char *frame = ruby_site_near_frame_of(ruby_site_current_ec(), &below);
    if (__builtin_expect(!frame, 0)) {
        bool top = true, none = false;
        if (!(frame = ruby_site_nearest_frame(ruby_site_current_ec(), &top, &none))) {
            *iseq = NULL;
            return none ? RUBY_PC_KEY_NO_FRAME : NULL;
        }
        below = !top;
    }
    return ruby_site_frame_key(frame, below, iseq);
}
/* Where rb_gc_count() reads the GC's count, found from its code while the
 * VM exists; NULL when its code is not the loads it is in CRuby 3.1. */
const size_t *ruby_gc_count_locate(const struct ruby_api *api);

/* Parse MEMPROF_LIBRARY_PATHS (extra "not the user's code" prefixes). */
void ruby_site_configure(void);

/* For the report and the dump (ruby_report.c). */
struct maps;
#define RUBY_NOT_LIVE ((VALUE)-1)
/* Rows of singleton classes are kept apart from the classes' own rows: they
 * are VM bookkeeping made with every class (ObjectSpace does not list them). */
#define ROW_SINGLETON_CLASS 0x100u
/* The tables held for a report or a dump: MEMPROF_OK with the lock taken, or
 * why not (no VM, the GC running, a hook holding it). */
enum memprof_status ruby_lock_for_reading(void);
/* The object's class now, if the object at that address is still the one
 * recorded; RUBY_NOT_LIVE otherwise (0: a hidden object's, or an imemo). */
VALUE ruby_live_class(const struct ruby_api *api, const struct maps *maps, const struct slot_entry *e,
                      VALUE recorded_class);
/* The cached path of a named class or module ("Foo::Bar") and its length,
 * or NULL: reads the class's ivars, never allocates. `klass` is a readable
 * class or module; what it points to is checked against `maps` (NULL in a
 * hook, where the VM's own objects are trusted). */
const char *ruby_class_path(const struct ruby_api *api, const struct maps *maps, VALUE klass, size_t *len);
/* A class's name without allocating (its cached path, or a description). */
void ruby_class_name(const struct ruby_api *api, const struct maps *maps, VALUE klass, unsigned type,
                     struct out *o);

/* Create the object whose compaction callback re-keys the tables. At a Ruby
 * safe point only (it allocates). */
void ruby_compact_watch(void);
#endif
