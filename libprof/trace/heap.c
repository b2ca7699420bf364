/* The C heap tracer's hooks and event rings.
 *
 * Every allocation function is hooked through the GOT of every object, libc
 * included (libc calls its own malloc through its GOT: strdup, fopen...).
 * A hook never takes a lock another hook can hold. It appends an event to its
 * thread's ring; events are applied to the table by whichever thread wins
 * the drain try-lock (a hook whose ring is half full, or a report).
 *
 * Order across threads: a block freed by one thread and handed out again to
 * another must be freed before it is allocated again. Frees are numbered
 * from one atomic counter (each number once), taking it before the real free
 * runs; an allocation only reads the counter, after the real allocation
 * returned. So an allocation that reuses a freed block reads a number past
 * that free's, and a free of a block reads one at or past its allocation's:
 * events apply in order of (number, allocation before free). Reading the
 * counter costs no cache-line transfer unless frees are taking numbers; most
 * frees take none: a free by the allocating thread cancels its allocation's
 * event while it is still in the ring. */
#include "heap.h"
#include "heap_ruby.h"
#include "../hook/got.h"
#include "../store/addr_table.h"
#include "../store/intern.h"
#include "../util/maps.h"
#include "../util/pages.h"
#include "../util/reentry.h"
#include "../util/sort.h"
#include "../util/spinlock.h"
#include "../elf/object.h"
#include <pthread.h>
#include <stdint.h>
#include <dlfcn.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/prctl.h>

enum event_kind {
    EVENT_NONE,
    EVENT_ALLOC,
    EVENT_FREE,
    EVENT_CANCELLED,   /* an allocation freed by its own thread before it was applied */
    EVENT_TAKEN,       /* being applied: too late to cancel */
};

#define HEAP_MAX_FRAMES 16

struct event {
    uint64_t number;
    uintptr_t addr, site;
    uint64_t size;
    uint16_t kind;
    uint16_t callers;              /* how many callers the ring keeps for it */
    uint32_t ruby_line;            /* heap_ruby's token, 0: none */
};

_Static_assert(sizeof(struct event) == 40, "an event fills 40 bytes");

/* An event's callers, innermost first, kept beside the ring (only when more
 * than one frame is recorded: events stay 40 bytes otherwise). */
typedef uintptr_t event_callers[HEAP_MAX_FRAMES - 1];

#define RING_EVENTS 65536
#define RECENT_ALLOCS 4096

/* Most blocks are freed by the thread that made them, soon: such a free
 * cancels the allocation's event if no drain has taken it yet, and neither
 * reaches the table (the site's totals still count it). */
struct recent_alloc { uintptr_t addr; uint64_t position, number; };

/* The owner's and the drainer's words live on cache lines of their own: a
 * line both write moves between cores at every event. */
#define CACHE_LINE 64

struct ring {
    struct ring *next;
    uint32_t thread;               /* the owner's serial number, from 1 */
    pid_t tid;                     /* its kernel thread id */
    bool exited;
    char name[16];                 /* its name when it exited */
    _Alignas(CACHE_LINE) uint64_t head;   /* next to apply; written by the drainer */
    _Alignas(CACHE_LINE) uint64_t tail;   /* next to fill; written by the owner */
    uint64_t head_seen;            /* the owner's last look at head: at most head */
    struct recent_alloc recent[RECENT_ALLOCS];   /* the owner's, by address */
    struct heap_ruby_cache ruby_lines;           /* the owner's */
    event_callers *callers;        /* [RING_EVENTS], or NULL with one frame */
    struct event events[RING_EVENTS];
};

static size_t recent_slot(uintptr_t addr)
{
    return (size_t)((addr >> 4) * 0x9E3779B97F4A7C15ull >> 52) % RECENT_ALLOCS;
}

/* Per-site figures, indexed by origin id. */
struct site_stats {
    uint64_t live_count, live_bytes, peak_bytes, total_count, total_bytes;
};

#define ORIGIN_CACHE 64
struct origin_cache_entry { uint64_t key, link; uint32_t origin; };

static struct {
    bool running;
    struct ring *rings;            /* atomic push-only list */
    _Alignas(CACHE_LINE) uint64_t next_number;   /* atomic: the next free's number */
    _Alignas(CACHE_LINE) spinlock_t drain_lock;  /* guards everything below; only tried */
    uint64_t expected;             /* the next free's number to apply */
    struct addr_table blocks;      /* address -> origin, size (saturated) */
    struct intern_table origins;   /* (call site, 0) */
    struct site_stats *stats;
    size_t stats_bytes;
    struct addr_table big;         /* exact sizes of blocks of 4 GiB or more */
    unsigned long dropped;
    struct origin_cache_entry origin_cache[ORIGIN_CACHE];   /* drain lock */
    uint32_t threads;              /* atomic: serial numbers handed out */
    pthread_key_t exit_key;        /* its destructor marks a thread's ring exited */
    bool exit_key_made;
} heap;

/* The thread that allocated, in the origin's site word above the address
 * (user space addresses fit in 47 bits). */
#define THREAD_SHIFT 48
#define MAX_THREAD_SERIAL 0xffffu    /* later threads share the last number */
#define ORIGIN_SITE(a) ((uintptr_t)((a) & (((uint64_t)1 << THREAD_SHIFT) - 1)))
#define ORIGIN_THREAD(a) ((uint32_t)((a) >> THREAD_SHIFT))

static __thread struct ring *my_ring __attribute__((tls_model("initial-exec")));

static int heap_frames = 1;

static struct ring *thread_ring(void)
{
    if (my_ring)
        return my_ring;
    struct ring *r = pages_alloc(sizeof *r);
    if (!r)
        return NULL;
    if (heap_frames > 1 && !(r->callers = pages_alloc(RING_EVENTS * sizeof *r->callers))) {
        pages_free(r, sizeof *r);
        return NULL;
    }
    uint32_t serial = __atomic_add_fetch(&heap.threads, 1, __ATOMIC_RELAXED);
    r->thread = serial < MAX_THREAD_SERIAL ? serial : MAX_THREAD_SERIAL;
    r->tid = gettid();
    if (heap.exit_key_made)
        pthread_setspecific(heap.exit_key, r);   /* no malloc for the first 32 keys */
    struct ring *top = __atomic_load_n(&heap.rings, __ATOMIC_ACQUIRE);
    do
        r->next = top;
    while (!__atomic_compare_exchange_n(&heap.rings, &top, r, true, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE));
    return my_ring = r;
}

/* --- applying events (drain lock held) ------------------------------------ */

static struct site_stats *stats_for(uint32_t origin)
{
    size_t need = ((size_t)origin + 1) * sizeof *heap.stats;
    if (need > heap.stats_bytes) {
        size_t bytes = heap.stats_bytes ? heap.stats_bytes : 65536;
        while (bytes < need)
            bytes *= 2;
        struct site_stats *s = pages_resize(heap.stats, heap.stats_bytes, bytes);
        if (!s)
            return NULL;
        heap.stats = s;
        heap.stats_bytes = bytes;
    }
    return &heap.stats[origin];
}

static uint64_t block_size(const struct addr_entry *e)
{
    if (e->aux != UINT32_MAX)
        return e->aux;
    const struct addr_entry *b = addr_table_get(&heap.big, e->key);
    return b ? ((uint64_t)b->origin << 32 | b->aux) : UINT32_MAX;
}

static void forget_block(struct addr_entry *e)
{
    struct site_stats *s = stats_for(e->origin);
    uint64_t size = block_size(e);
    if (s) {
        s->live_count--;
        s->live_bytes -= size;
    }
    if (e->aux == UINT32_MAX)
        addr_table_remove(&heap.big, e->key);
    addr_table_remove(&heap.blocks, e->key);
}

/* A site with its callers is a chain of interned (pc, caller's id + 1); the
 * innermost link also holds the Ruby line, in the high half. */
#define ORIGIN_CALLER(b) ((uint32_t)(b))
#define ORIGIN_RUBY_LINE(b) ((uint32_t)((b) >> 32))

static uint32_t origin_of(const struct event *ev, const uintptr_t *caller, uint32_t thread)
{
    uint32_t id = INTERN_NONE;
    for (uint32_t i = caller ? ev->callers : 0; i-- > 0;) {
        id = intern_put(&heap.origins, caller[i], id == INTERN_NONE ? 0 : (uint64_t)id + 1);
        if (id == INTERN_NONE)
            return id;
    }
    uint64_t link = (id == INTERN_NONE ? 0 : (uint64_t)id + 1) | (uint64_t)ev->ruby_line << 32;
    uint64_t key = ev->site | (uint64_t)thread << THREAD_SHIFT;
    /* Most events come from a few sites: remember the last origin of each
     * (origins are never removed, so an entry stays right). */
    struct origin_cache_entry *c =
        &heap.origin_cache[((key ^ link) * 0x9E3779B97F4A7C15ull >> 58) % ORIGIN_CACHE];
    if (c->key == key && c->link == link && c->origin != INTERN_NONE)
        return c->origin;
    uint32_t origin = intern_put(&heap.origins, key, link);
    *c = (struct origin_cache_entry){ key, link, origin };
    return origin;
}

/* An allocation that never reached the table still counts in its site's
 * totals. */
static void count_cancelled(const struct event *ev, const uintptr_t *caller, uint32_t thread)
{
    uint32_t origin = origin_of(ev, caller, thread);
    struct site_stats *s = origin == INTERN_NONE ? NULL : stats_for(origin);
    if (s) {
        s->total_count++;
        s->total_bytes += ev->size;
    }
}

static void apply(struct event *ev, const uintptr_t *caller, uint32_t thread)
{
    /* Take an allocation so its thread can no longer cancel it; a cancelled
     * one stays cancelled (no locked instruction for most events). */
    uint16_t kind = __atomic_load_n(&ev->kind, __ATOMIC_ACQUIRE);
    if (kind != EVENT_CANCELLED)
        kind = __atomic_exchange_n(&ev->kind, EVENT_TAKEN, __ATOMIC_ACQ_REL);
    if (kind == EVENT_CANCELLED) {
        count_cancelled(ev, caller, thread);
        return;
    }
    struct addr_entry *known = ev->addr ? addr_table_get(&heap.blocks, ev->addr) : NULL;
    if (kind == EVENT_FREE) {
        if (known)          /* a block allocated before memprof started is ignored */
            forget_block(known);
        return;
    }
    if (kind != EVENT_ALLOC)
        return;
    if (known)              /* its free was not seen: the old block is gone */
        forget_block(known);
    uint32_t origin = origin_of(ev, caller, thread);
    struct site_stats *s = origin == INTERN_NONE ? NULL : stats_for(origin);
    uint32_t small = ev->size >= UINT32_MAX ? UINT32_MAX : (uint32_t)ev->size;
    if (!s || addr_table_put(&heap.blocks, ev->addr, origin, small) == ADDR_PUT_NO_MEMORY) {
        heap.dropped++;
        return;
    }
    if (small == UINT32_MAX)
        addr_table_put(&heap.big, ev->addr, (uint32_t)(ev->size >> 32), (uint32_t)ev->size);
    s->live_count++;
    s->live_bytes += ev->size;
    s->total_count++;
    s->total_bytes += ev->size;
    if (s->live_bytes > s->peak_bytes)
        s->peak_bytes = s->live_bytes;
}

/* The drainer's view of the rings with events: their tails are read once
 * per refresh, not at every event (each read pulls a line the owner writes). */
#define DRAIN_CURSORS 128
struct drain_cursor { struct ring *ring; uint64_t head, tail; };

static size_t refresh_cursors(struct drain_cursor *c)
{
    size_t n = 0;
    for (struct ring *r = __atomic_load_n(&heap.rings, __ATOMIC_ACQUIRE); r && n < DRAIN_CURSORS; r = r->next) {
        uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
        if (r->head != tail)
            c[n++] = (struct drain_cursor){ r, r->head, tail };
    }
    return n;
}

static bool is_free_event(const struct event *ev)
{
    uint16_t kind = __atomic_load_n(&ev->kind, __ATOMIC_ACQUIRE);
    return kind == EVENT_FREE || kind == EVENT_NONE;
}

static void apply_head(struct drain_cursor *c)
{
    struct ring *r = c->ring;
    size_t index = c->head % RING_EVENTS;
    apply(&r->events[index], r->callers ? r->callers[index] : NULL, r->thread);
    __atomic_store_n(&r->head, ++c->head, __ATOMIC_RELEASE);
}

/* Apply the allocations at the heads of the rings numbered at most `limit`
 * (all frees before them are applied). Per ring, events are in order. */
static bool apply_allocations(struct drain_cursor *c, size_t n, uint64_t limit)
{
    bool applied = false;
    for (size_t i = 0; i < n; i++)
        while (c[i].head != c[i].tail) {
            const struct event *ev = &c[i].ring->events[c[i].head % RING_EVENTS];
            if (is_free_event(ev) || ev->number > limit)
                break;
            apply_head(&c[i]);
            applied = true;
        }
    return applied;
}

/* After fork: the threads that held the missing numbers are gone; apply
 * every published event, lowest (number, allocation before free) first. */
static void drain_all_in_order(void)
{
    struct drain_cursor cursors[DRAIN_CURSORS];
    for (size_t n; (n = refresh_cursors(cursors)) > 0;) {
        for (;;) {
            struct drain_cursor *lowest = NULL;
            uint64_t lowest_key = UINT64_MAX;
            for (size_t i = 0; i < n; i++) {
                if (cursors[i].head == cursors[i].tail)
                    continue;
                const struct event *ev = &cursors[i].ring->events[cursors[i].head % RING_EVENTS];
                uint64_t key = ev->number * 2 + is_free_event(ev);
                if (key < lowest_key) {
                    lowest_key = key;
                    lowest = &cursors[i];
                }
            }
            if (!lowest)
                break;
            apply_head(lowest);
        }
    }
    heap.expected = __atomic_load_n(&heap.next_number, __ATOMIC_RELAXED);
}

/* Apply events in order until the next free's event is not yet published.
 * Before a free is applied the tails are read again: the allocations
 * published before it (the block it frees among them) are then seen and
 * applied first. */
static void drain_locked(void)
{
    struct drain_cursor cursors[DRAIN_CURSORS];
    size_t n = refresh_cursors(cursors);
    bool fresh = true;
    for (;;) {
        if (apply_allocations(cursors, n, heap.expected))
            fresh = false;
        struct ring *ring = NULL;
        for (size_t i = 0; i < n && !ring; i++) {
            const struct event *ev = &cursors[i].ring->events[cursors[i].head % RING_EVENTS];
            if (cursors[i].head != cursors[i].tail && is_free_event(ev) && ev->number == heap.expected)
                ring = cursors[i].ring;
        }
        if (!ring) {
            if (fresh)
                return;   /* the next free is not published yet */
            n = refresh_cursors(cursors);
            fresh = true;
            continue;
        }
        n = refresh_cursors(cursors);
        apply_allocations(cursors, n, heap.expected);
        for (size_t i = 0; i < n; i++)
            if (cursors[i].ring == ring) {
                heap.expected++;
                apply_head(&cursors[i]);   /* still the free: it blocks its ring */
                break;
            }
        fresh = false;
    }
}

static bool try_drain(void)
{
    if (!spin_trylock(&heap.drain_lock))
        return false;
    drain_locked();
    spin_unlock(&heap.drain_lock);
    return true;
}

/* --- the hooks ------------------------------------------------------------- */

/* A slot in this thread's ring for event `number`, waiting only for the ring
 * to have room: the thread draining (never this one) is applying events. */
static struct event *reserve(struct ring *r)
{
    if (r->tail - r->head_seen < RING_EVENTS / 2)   /* room, without reading head */
        return &r->events[r->tail % RING_EVENTS];
    for (;;) {
        uint64_t used = r->tail - (r->head_seen = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE));
        if (used < RING_EVENTS) {
            if (used >= RING_EVENTS / 2)
                try_drain();
            return &r->events[r->tail % RING_EVENTS];
        }
        if (!try_drain())
            __builtin_ia32_pause();
    }
}

static void publish(struct ring *r)
{
    __atomic_store_n(&r->tail, r->tail + 1, __ATOMIC_RELEASE);
}

/* A free's number: its own. */
static uint64_t take_number(void)
{
    return __atomic_fetch_add(&heap.next_number, 1, __ATOMIC_SEQ_CST);
}

/* An allocation's number: the next free's, read after the real allocation
 * returned (on x86 a load is not reordered before the allocator's loads). */
static uint64_t read_number(void)
{
    return __atomic_load_n(&heap.next_number, __ATOMIC_SEQ_CST);
}

/* An event for a block that exists now: numbered after the allocation. */
/* Backtraces: libunwind's unw_backtrace (it reads the unwind tables, so code
 * built without frame pointers unwinds too, and it does not call malloc),
 * loaded at start when more than one frame is asked for. */
static int (*unwind_backtrace)(void **frames, int size);
static uintptr_t self_start, self_end;   /* memprof's own code: not a frame */

static uint32_t callers_of(uintptr_t site, uintptr_t *caller)
{
    void *raw[HEAP_MAX_FRAMES + 8];
    int n = unwind_backtrace(raw, heap_frames + 8);
    uint32_t count = 0;
    bool past_site = false;
    for (int i = 0; i < n && count < (uint32_t)heap_frames - 1; i++) {
        uintptr_t ip = (uintptr_t)raw[i];
        if (ip >= self_start && ip < self_end)
            continue;
        if (!past_site) {       /* the first frame outside memprof is the site */
            past_site = ip == site;
            if (past_site)
                continue;
        }
        caller[count++] = ip;
    }
    return past_site ? count : 0;
}

static void note_alloc(void *p, size_t size, void *site)
{
    struct ring *r;
    if (!p || !__atomic_load_n(&heap.running, __ATOMIC_RELAXED) || !(r = thread_ring()))
        return;
    struct event *ev = reserve(r);
    uint16_t callers = r->callers && unwind_backtrace
                           ? callers_of((uintptr_t)site, r->callers[r->tail % RING_EVENTS]) : 0;
    uint32_t ruby_line = heap_ruby_line(&r->ruby_lines);
    *ev = (struct event){ read_number(), (uintptr_t)p, (uintptr_t)site, size, EVENT_ALLOC, callers, ruby_line };
    r->recent[recent_slot((uintptr_t)p)] = (struct recent_alloc){ (uintptr_t)p, r->tail, ev->number };
    publish(r);
}

/* Cancel this thread's own allocation event of `p` if no drain took it: the
 * free then needs no event. Only while no free at all has been numbered
 * since that allocation: otherwise the block may have been freed by another
 * thread and `p` handed out again, and this free is of that later block. */
static bool cancel_own_alloc(void *p)
{
    struct ring *r = my_ring;
    if (!p || !r)
        return false;
    struct recent_alloc *a = &r->recent[recent_slot((uintptr_t)p)];
    if (a->addr != (uintptr_t)p)
        return false;
    a->addr = 0;
    if (r->tail - a->position >= RING_EVENTS || read_number() != a->number)
        return false;   /* its slot reused, or a free was numbered since */
    struct event *ev = &r->events[a->position % RING_EVENTS];
    uint16_t expected = EVENT_ALLOC;
    return __atomic_compare_exchange_n(&ev->kind, &expected, EVENT_CANCELLED, false,
                                       __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/* A free is numbered before the real free: see the comment at the top. The
 * event is reserved first and published after, as EVENT_NONE if it turns out
 * no block was freed (a failed realloc). */
static struct event *begin_free(struct ring **ring, void *p)
{
    if (!p || !__atomic_load_n(&heap.running, __ATOMIC_RELAXED) || !(*ring = thread_ring()))
        return NULL;
    struct event *ev = reserve(*ring);
    *ev = (struct event){ take_number(), (uintptr_t)p, 0, 0, EVENT_FREE, 0, 0 };
    return ev;
}

static void end_free(struct ring *r, struct event *ev, bool freed)
{
    if (!ev)
        return;
    if (!freed)
        ev->kind = EVENT_NONE;
    publish(r);
}

#define HEAP_HOOKS(X)                                                                          \
    X(malloc, void *, (size_t size), (size))                                                   \
    X(calloc, void *, (size_t n, size_t size), (n, size))                                      \
    X(realloc, void *, (void *p, size_t size), (p, size))                                      \
    X(reallocarray, void *, (void *p, size_t n, size_t size), (p, n, size))                    \
    X(free, void, (void *p), (p))                                                              \
    X(posix_memalign, int, (void **out, size_t align, size_t size), (out, align, size))        \
    X(aligned_alloc, void *, (size_t align, size_t size), (align, size))                       \
    X(memalign, void *, (size_t align, size_t size), (align, size))                            \
    X(valloc, void *, (size_t size), (size))                                                   \
    X(pvalloc, void *, (size_t size), (size))

#define DECLARE_NEXT(name, ret, params, args) static ret (*next_##name) params;
HEAP_HOOKS(DECLARE_NEXT)

/* Inside memprof (its own work, or a signal handler interrupting a hook):
 * call through without recording. */
#define PASS_THROUGH_IF_INSIDE(call) \
    if (!reentry_enter())            \
        return call;

static void *hook_malloc(size_t size)
{
    PASS_THROUGH_IF_INSIDE(next_malloc(size));
    void *p = next_malloc(size);
    note_alloc(p, size, __builtin_return_address(0));
    reentry_leave();
    return p;
}

static void *hook_calloc(size_t n, size_t size)
{
    PASS_THROUGH_IF_INSIDE(next_calloc(n, size));
    void *p = next_calloc(n, size);
    note_alloc(p, n * size, __builtin_return_address(0));
    reentry_leave();
    return p;
}

static void *hook_realloc(void *old, size_t size)
{
    PASS_THROUGH_IF_INSIDE(next_realloc(old, size));
    struct ring *r = NULL;
    struct event *ev = begin_free(&r, old);
    void *p = next_realloc(old, size);
    /* realloc(p, 0) frees p (glibc returns NULL); a NULL for a size means
     * failure, and p is untouched. */
    end_free(r, ev, p || size == 0);
    note_alloc(p, size, __builtin_return_address(0));
    reentry_leave();
    return p;
}

static void *hook_reallocarray(void *old, size_t n, size_t size)
{
    PASS_THROUGH_IF_INSIDE(next_reallocarray(old, n, size));
    struct ring *r = NULL;
    struct event *ev = begin_free(&r, old);
    void *p = next_reallocarray(old, n, size);
    end_free(r, ev, p != NULL);
    note_alloc(p, n * size, __builtin_return_address(0));
    reentry_leave();
    return p;
}

static void hook_free(void *p)
{
    PASS_THROUGH_IF_INSIDE(next_free(p));
    if (cancel_own_alloc(p)) {
        next_free(p);
        reentry_leave();
        return;
    }
    struct ring *r = NULL;
    struct event *ev = begin_free(&r, p);
    next_free(p);
    end_free(r, ev, true);
    reentry_leave();
}

static int hook_posix_memalign(void **out, size_t align, size_t size)
{
    PASS_THROUGH_IF_INSIDE(next_posix_memalign(out, align, size));
    int rc = next_posix_memalign(out, align, size);
    if (rc == 0)
        note_alloc(*out, size, __builtin_return_address(0));
    reentry_leave();
    return rc;
}

#define SIMPLE_ALIGNED_HOOK(name, params, call)            \
    static void *hook_##name params                        \
    {                                                      \
        PASS_THROUGH_IF_INSIDE(next_##name call);          \
        void *p = next_##name call;                        \
        note_alloc(p, size, __builtin_return_address(0));  \
        reentry_leave();                                   \
        return p;                                          \
    }
SIMPLE_ALIGNED_HOOK(aligned_alloc, (size_t align, size_t size), (align, size))
SIMPLE_ALIGNED_HOOK(memalign, (size_t align, size_t size), (align, size))
SIMPLE_ALIGNED_HOOK(valloc, (size_t size), (size))
SIMPLE_ALIGNED_HOOK(pvalloc, (size_t size), (size))

/* Each hook has the hooked function's own type: a mismatch fails to compile. */
#define CHECK_TYPE(name, ret, params, args) \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&hook_##name), __typeof__(&name)), #name);
HEAP_HOOKS(CHECK_TYPE)

#define HOOK_ENTRY(name, ret, params, args) \
    { .symbol = #name, .replacement = (void *)hook_##name, .next = (void **)&next_##name },
static struct got_hook hooks[] = { HEAP_HOOKS(HOOK_ENTRY) };
#define HOOK_COUNT (sizeof hooks / sizeof hooks[0])

/* A thread's exit: keep its name for the report (its /proc entry goes). */
static void ring_exited(void *ring)
{
    struct ring *r = ring;
    prctl(PR_GET_NAME, r->name);
    r->name[sizeof r->name - 1] = '\0';
    __atomic_store_n(&r->exited, true, __ATOMIC_RELEASE);
}

static void prepare_once(void)
{
    pthread_atfork(NULL, NULL, heap_tracer_after_fork);
    heap.exit_key_made = pthread_key_create(&heap.exit_key, ring_exited) == 0;
}

bool heap_tracer_set_frames(int frames)
{
    if (frames < 1 || frames > HEAP_MAX_FRAMES)
        return false;
    heap_frames = frames;
    return true;
}

/* Find memprof's own code and, for backtraces, libunwind. Before any hook is
 * installed: dlopen allocates. */
static void prepare_backtraces(void)
{
    struct elf_object objects[256];
    size_t n = elf_objects_snapshot(objects, 256);
    const struct elf_object *self = elf_objects_find(objects, n < 256 ? n : 256, (uintptr_t)&prepare_backtraces);
    if (self) {
        self_start = self->start;
        self_end = self->end;
    }
    if (heap_frames <= 1 || unwind_backtrace)
        return;
    void *lib = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    *(void **)&unwind_backtrace = lib ? dlsym(lib, "unw_backtrace") : NULL;
    if (!unwind_backtrace) {
        heap_frames = 1;
        return;
    }
    /* A cache of unwind information per thread: no lock shared by threads. */
    void **local = dlsym(lib, "_ULx86_64_local_addr_space");
    int (*set_policy)(void *, int) = (int (*)(void *, int))dlsym(lib, "_ULx86_64_set_caching_policy");
    if (local && set_policy)
        set_policy(*local, 2 /* UNW_CACHE_PER_THREAD */);
}

bool heap_tracer_has_backtraces(void)
{
    return unwind_backtrace != NULL;
}

enum heap_status heap_tracer_start(void)
{
    static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
    if (heap.running)
        return HEAP_OK;
    prepare_backtraces();
    heap_ruby_enable();
    pthread_once(&atfork_once, prepare_once);
    for (size_t i = 0; i < HOOK_COUNT; i++) {
        if (got_hook_install(&hooks[i]) != 0) {
            while (i-- > 0)
                got_hook_remove(&hooks[i]);
            return HEAP_HOOK_FAILED;
        }
    }
    __atomic_store_n(&heap.running, true, __ATOMIC_RELEASE);
    return HEAP_OK;
}

void heap_tracer_stop(void)
{
    if (!heap.running)
        return;
    __atomic_store_n(&heap.running, false, __ATOMIC_RELEASE);
    for (size_t i = HOOK_COUNT; i-- > 0;)
        got_hook_remove(&hooks[i]);
}

bool heap_tracer_running(void)
{
    return heap.running;
}

void heap_tracer_after_fork(void)
{
    /* Only the forking thread survives: numbers other threads took are never
     * published, and a drain lock one of them held is void. */
    spin_reset(&heap.drain_lock);
    heap_ruby_after_fork();
    for (struct ring *r = heap.rings; r; r = r->next)
        if (r != my_ring)
            r->exited = true;   /* the parent's other threads: not here */
    if (my_ring)
        my_ring->tid = gettid();
    drain_all_in_order();
}

void heap_tracer_usage(unsigned long *blocks, unsigned long *bytes)
{
    *blocks = heap.blocks.count;
    *bytes = addr_table_bytes(&heap.blocks) + intern_bytes(&heap.origins) + heap.stats_bytes +
             heap_ruby_bytes();
}

/* --- the report -------------------------------------------------------------- */

/* A row: the origins that differ only by thread, summed (the peak's sum is an
 * upper bound: the parts may have peaked at different times); one origin per
 * row when rows are asked for by thread. */
struct report_row {
    uint32_t origin;               /* the first of them: its site, callers, Ruby line */
    struct site_stats sum;
};

/* Largest live bytes first, then live count, then site address. */
static int report_row_cmp(const void *x, const void *y, void *ctx)
{
    (void)ctx;
    const struct report_row *a = x, *b = y;
    if (a->sum.live_bytes != b->sum.live_bytes)
        return a->sum.live_bytes > b->sum.live_bytes ? -1 : 1;
    if (a->sum.live_count != b->sum.live_count)
        return a->sum.live_count > b->sum.live_count ? -1 : 1;
    uintptr_t pa = ORIGIN_SITE(intern_get(&heap.origins, a->origin)->a);
    uintptr_t pb = ORIGIN_SITE(intern_get(&heap.origins, b->origin)->a);
    return pa < pb ? -1 : pa > pb;
}

static void add_stats(struct site_stats *into, const struct site_stats *s)
{
    into->live_count += s->live_count;
    into->live_bytes += s->live_bytes;
    into->peak_bytes += s->peak_bytes;
    into->total_count += s->total_count;
    into->total_bytes += s->total_bytes;
}

/* "0xADDRESS object+0xOFFSET" for a code address. */
static void write_site(struct out *o, uintptr_t site, const struct elf_object *objects, size_t n)
{
    out_hex(o, site);
    out_char(o, ' ');
    const struct elf_object *obj = elf_objects_find(objects, n, site - 1);
    if (!obj) {
        out_str(o, "?");
        return;
    }
    if (*obj->name) {
        out_str(o, obj->name);
    } else {   /* the program: its path, without malloc */
        char exe[4096];
        ssize_t len = readlink("/proc/self/exe", exe, sizeof exe);
        out_bytes(o, exe, len > 0 ? (size_t)len : 0);
    }
    out_char(o, '+');
    out_hex(o, site - obj->base);
}

static void write_row(struct out *o, const struct report_row *row, bool by_thread,
                      const struct elf_object *objects, size_t object_count)
{
    const struct site_stats *s = &row->sum;
    const struct intern_tuple *origin = intern_get(&heap.origins, row->origin);
    out_u64(o, s->live_count);
    out_char(o, ' ');
    out_u64(o, s->live_bytes);
    out_char(o, ' ');
    out_u64(o, s->peak_bytes);
    out_char(o, ' ');
    out_u64(o, s->total_count);
    out_char(o, ' ');
    out_u64(o, s->total_bytes);
    out_char(o, ' ');
    write_site(o, ORIGIN_SITE(origin->a), objects, object_count);
    out_char(o, '\n');
    for (uint32_t parent = ORIGIN_CALLER(origin->b); parent; ) {
        const struct intern_tuple *t = intern_get(&heap.origins, parent - 1);
        out_str(o, "  from ");
        write_site(o, (uintptr_t)t->a, objects, object_count);
        out_char(o, '\n');
        parent = ORIGIN_CALLER(t->b);
    }
    if (ORIGIN_RUBY_LINE(origin->b)) {
        out_str(o, "  ruby ");
        heap_ruby_write(o, ORIGIN_RUBY_LINE(origin->b));
        out_char(o, '\n');
    }
    if (by_thread) {
        out_str(o, "  thread ");
        out_u64(o, ORIGIN_THREAD(origin->a));
        out_char(o, '\n');
    }
}

/* A living thread's name, from /proc (no malloc); "" when it is gone. */
static void thread_name(pid_t tid, char name[16])
{
    char path[64];
    struct out p;
    out_init_fd(&p, -1, path, sizeof path);
    out_str(&p, "/proc/self/task/");
    out_u64(&p, (uint64_t)tid);
    out_str(&p, "/comm");
    name[0] = '\0';
    int fd = out_finish(&p) == 0 ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    if (fd < 0)
        return;
    ssize_t n = read(fd, name, 15);
    close(fd);
    n = n < 0 ? 0 : n;
    while (n > 0 && name[n - 1] == '\n')
        n--;
    name[n] = '\0';
}

/* "# thread SERIAL TID live_count live_bytes total_count NAME", per thread
 * that allocated, in the order they started. */
static enum heap_status write_threads(struct out *o)
{
    uint32_t count = __atomic_load_n(&heap.threads, __ATOMIC_RELAXED);
    count = count < MAX_THREAD_SERIAL ? count : MAX_THREAD_SERIAL;
    size_t bytes = ((size_t)count + 1) * (sizeof(struct site_stats) + sizeof(struct ring *));
    struct site_stats *per = pages_alloc(bytes);
    if (!per)
        return HEAP_NO_MEMORY;
    struct ring **ring_of = (struct ring **)(per + count + 1);
    for (uint32_t id = 0; id < heap.origins.count; id++)
        add_stats(&per[ORIGIN_THREAD(intern_get(&heap.origins, id)->a)], &heap.stats[id]);
    for (struct ring *r = __atomic_load_n(&heap.rings, __ATOMIC_ACQUIRE); r; r = r->next)
        if (r->thread <= count && !ring_of[r->thread])
            ring_of[r->thread] = r;
    for (uint32_t t = 1; t <= count; t++) {
        struct ring *r = ring_of[t];
        if (!r || !per[t].total_count)
            continue;
        char name[16];
        if (__atomic_load_n(&r->exited, __ATOMIC_ACQUIRE))
            memcpy(name, r->name, sizeof name);
        else
            thread_name(r->tid, name);
        out_str(o, "# thread ");
        out_u64(o, t);
        out_char(o, ' ');
        out_u64(o, (uint64_t)r->tid);
        out_char(o, ' ');
        out_u64(o, per[t].live_count);
        out_char(o, ' ');
        out_u64(o, per[t].live_bytes);
        out_char(o, ' ');
        out_u64(o, per[t].total_count);
        out_char(o, ' ');
        out_str(o, *name ? name : "-");
        out_char(o, '\n');
    }
    pages_free(per, bytes);
    return HEAP_OK;
}

enum heap_status heap_tracer_report(struct out *o, unsigned long top, bool by_thread)
{
    if (!spin_trylock(&heap.drain_lock))
        return HEAP_BUSY;
    if (!heap_ruby_lock_for_report()) {
        spin_unlock(&heap.drain_lock);
        return HEAP_BUSY;
    }
    drain_locked();
    size_t n = heap.origins.count, rows_bytes = (n ? n : 1) * sizeof(struct report_row);
    struct report_row *rows = pages_alloc(rows_bytes);
    struct elf_object *objects = pages_alloc(256 * sizeof *objects);
    struct intern_table groups = { 0 };   /* (site, link) -> row */
    enum heap_status status = HEAP_OK;
    if (!rows || !objects) {
        status = HEAP_NO_MEMORY;
        goto out;
    }
    size_t row_count = 0;
    for (uint32_t id = 0; id < n; id++) {
        const struct intern_tuple *t = intern_get(&heap.origins, id);
        uint32_t g = by_thread ? id : intern_put(&groups, ORIGIN_SITE(t->a), t->b);
        if (g == INTERN_NONE) {
            status = HEAP_NO_MEMORY;
            goto out;
        }
        if (g == row_count)
            rows[row_count++] = (struct report_row){ .origin = id };
        add_stats(&rows[g].sum, &heap.stats[id]);
    }
    size_t live = 0;
    for (size_t i = 0; i < row_count; i++)
        if (rows[i].sum.live_count)
            rows[live++] = rows[i];
    sort_in_place(rows, live, sizeof *rows, report_row_cmp, NULL);
    size_t object_count = elf_objects_snapshot(objects, 256);
    if (object_count > 256)
        object_count = 256;
    out_str(o, "# memprof heap: live blocks by call site (count bytes peak_bytes total_count total_bytes site object+offset)\n");
    unsigned long blocks, table_bytes, ring_bytes = 0;
    heap_tracer_usage(&blocks, &table_bytes);
    for (struct ring *r = __atomic_load_n(&heap.rings, __ATOMIC_ACQUIRE); r; r = r->next)
        ring_bytes += sizeof *r;
    out_str(o, "# tables ");
    out_u64(o, blocks);
    out_char(o, ' ');
    out_u64(o, table_bytes);
    out_char(o, ' ');
    out_u64(o, ring_bytes);
    out_str(o, " (live blocks, bytes of memprof's tables, bytes of its per-thread rings)\n");
    status = write_threads(o);
    for (size_t i = 0; status == HEAP_OK && i < live && (!top || i < top); i++)
        write_row(o, &rows[i], by_thread, objects, object_count);
    if (heap.dropped) {
        out_str(o, "# warning: ");
        out_u64(o, heap.dropped);
        out_str(o, " allocations were not recorded (out of memory)\n");
    }
out:
    intern_free(&groups);
    pages_free(rows, rows_bytes);
    pages_free(objects, 256 * sizeof *objects);
    heap_ruby_unlock();
    spin_unlock(&heap.drain_lock);
    return status;
}
