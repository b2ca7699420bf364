/* The C heap tracer's report: every thread's tables, read while their
 * owners may still run (heap_thread.h), merged into rows by call site.
 *
 * Which blocks live: at each address, the events the threads kept, ordered
 * by (number, allocation before free) (see heap_hooks.c), and the last one
 * decides. An allocation is live unless a free or a later allocation at its
 * address follows it. A block a thread freed itself is already gone from
 * its table. */
#include "heap.h"
#include "heap_custom.h"
#include "heap_thread.h"
#include "heap_wrappers.h"
#include "../../store/intern.h"
#include "../../util/pages.h"
#include "../../util/sort.h"
#include "../../util/tasks.h"
#include "heap_sample.h"
#include "../../objfile/object.h"
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* Per-site figures. */
struct site_stats {
    uint64_t live_count, live_bytes, peak_bytes, total_count, total_bytes;
};

/* A thread's tables, in the order blocks move: the older table, its spill,
 * the freed table. */
enum { BLOCKS, SPILL, FREED, TABLES };

/* One thread as the report read it. */
struct thread_view {
    struct heap_thread *thread;
    const struct heap_origin *origins;
    size_t origin_count;
    /* Each table's region arrays as loaded once, sized and read */
    const struct block_array **arrays[TABLES];
    size_t array_count[TABLES];
    size_t first_event, events;     /* its run of the report's events[] */
    struct site_stats *live;        /* [origin_count]: live_count, live_bytes */
    uint32_t *chain;                /* [origin_count]: canonical chain id + 1, 0: not yet */
    /* Its leaving slots as read, newest first: of two blocks at one address
     * with one number (the older freed unseen), the first read stays. */
    struct block_slot ring[LEAVING_SLOTS];
};

/* An event at an address: a block a thread holds (even order) or a free of
 * one it did not hold (odd). Whose it is follows from where it lies: each
 * thread's events are one run of the report's array. */
struct event {
    uintptr_t addr;
    uint64_t order;                 /* number * 2 + is_free */
    uint64_t word;
};

/* How many events each bucket of addresses has: 0, 1, or 2 for more, in two
 * bits. An address alone in its bucket has one event, which decides it.
 * Buckets follow the addresses (16 bytes each, malloc's alignment, wrapping
 * around): a table is read a region of addresses at a time, so its counts
 * stay in the cache. Addresses that share a bucket are only slower. */
struct bucket_counts {
    uint8_t *bits;
    size_t mask;                    /* buckets - 1 */
};

static size_t bucket_of(const struct bucket_counts *c, uintptr_t addr)
{
    return (size_t)(addr >> 4) & c->mask;
}

static unsigned bucket_count(const struct bucket_counts *c, size_t b)
{
    return (c->bits[b >> 2] >> ((b & 3) * 2)) & 3u;
}

static void bucket_add(struct bucket_counts *c, uintptr_t addr)
{
    size_t b = bucket_of(c, addr);
    if (bucket_count(c, b) < 2)
        c->bits[b >> 2] = (uint8_t)(c->bits[b >> 2] + (1u << ((b & 3) * 2)));
}

/* A run of slots the report reads: a thread's young slots (wide, base 0)
 * or one array of its tables. */
struct table_part {
    const uint64_t *slots;
    size_t count;                   /* slots, or a logged array's entries */
    bool packed, freed;
    uint64_t base;                  /* packed: the array's number base */
    const struct block_array *log;  /* a logged array: its entries read in order (block_log_next) */
};

/* Slot i of a part as a block, read whole: false when it is empty or gone,
 * or its key changed while it was read (its owner rewrites it) four times. */
static inline __attribute__((always_inline)) bool part_block(const struct table_part *p, size_t i, struct block_slot *b)
{
    const uint64_t *s = p->slots + i * block_words(p->packed);
    for (int tries = 0; tries < 4; tries++) {
        uint64_t key = __atomic_load_n(&s[0], __ATOMIC_ACQUIRE);
        if (!BLOCK_IS_LIVE(key))
            return false;
        *b = block_slot_decode(p->packed, p->base, key, s);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&s[0], __ATOMIC_RELAXED) == key)
            return true;
    }
    return false;
}

/* Where a reading of a part is: the next slot or entry, and in a logged
 * array the number of the entries read so far. */
struct part_cursor {
    size_t i;
    uint64_t number;
};

static struct part_cursor part_start(const struct table_part *p)
{
    return (struct part_cursor){ 0, p->base };
}

/* The part's next block, read whole; false at its end. */
static inline __attribute__((always_inline)) bool part_next(const struct table_part *p, struct part_cursor *c,
                                                            struct block_slot *b)
{
    if (p->log)
        return block_log_next(p->log, p->count, &c->i, &c->number, b);
    for (; c->i < p->count; c->i++)
        if (part_block(p, c->i, b)) {
            c->i++;
            return true;
        }
    return false;
}

/* Copy a table's entries, each whole, counted by bucket. */
static size_t read_slots(const struct table_part *p, struct bucket_counts *counts, struct event *out)
{
    size_t n = 0;
    struct block_slot b;
    for (struct part_cursor c = part_start(p); part_next(p, &c, &b);) {
        out[n++] = (struct event){ b.addr, b.number * 2 + p->freed, b.word };
        bucket_add(counts, b.addr);
    }
    return n;
}

/* Nothing changes the tables while the report reads them: each thread with
 * a record is this one (inside the runtime, its hooks pass through) or gone
 * (its task no longer exists), as at the exit of a program whose threads
 * were joined. A thread that frees without a record yet makes one, later
 * than the report's list, which it would not read either way. */
static bool tables_at_rest(const struct heap_thread *newest)
{
    pid_t self = gettid();
    for (const struct heap_thread *t = newest; t; t = t->next)
        if (t->tid != self && !tasks_gone(t->tid))
            return false;
    return true;
}

/* At rest, a table's addresses counted by bucket before its blocks are
 * read: a block alone at its address is counted at once, and only the rest
 * become events (an exit report of 160,000 live blocks wrote 4 MB of events,
 * half its time in mapping them). An address `big` (the largest older
 * table, not counted) holds too, or may (a logged array's granule: see
 * store/block_table.h), is counted twice: neither block is alone. */
static void add_addresses(const struct table_part *p, struct bucket_counts *counts, struct block_table *big)
{
    struct block_slot b;
    for (struct part_cursor c = part_start(p); part_next(p, &c, &b);) {
        bucket_add(counts, b.addr);
        if (big && block_table_may_hold(big, b.addr))   /* or only may: its block then an event too */
            bucket_add(counts, b.addr);
    }
}

/* The live blocks counted so far, by origin in each view's live[] and in all. */
struct live_sum {
    uint64_t sample;                /* heap_tracer_sample_bytes() */
    size_t blocks;
    uint64_t bytes;
};
static inline void count_live(struct thread_view *v, const struct event *ev, struct live_sum *sum);

/* An event that shares its bucket copied to out[n], its place to shared[]. */
static inline __attribute__((always_inline)) void copy_shared(const struct event *ev, struct event *out, size_t n,
                                                              size_t first, uint32_t *shared, size_t *shared_count)
{
    out[n] = *ev;
    shared[(*shared_count)++] = (uint32_t)(first + n);
}

/* The entries alone in their buckets (counted `counted` times: 1, or 0 for
 * a part whose addresses were not counted) counted into `v`, the others
 * copied to out[] (and their places to shared[]); how many were copied.
 * At rest (read_at_rest): a packed array's slots are read once each, as
 * they are (a grown heap's million blocks are counted here: 71 instructions
 * a block through part_block, whose rereads guard against a running owner). */
static size_t count_or_copy(struct thread_view *v, const struct table_part *p, const struct bucket_counts *counts,
                            unsigned counted, struct live_sum *sum, struct event *out, size_t first,
                            uint32_t *shared, size_t *shared_count)
{
    size_t n = 0;
    if (p->packed && !p->log && !p->freed && !sum->sample) {
        struct live_sum exact = { .sample = 0 };   /* in registers */
        for (size_t i = 0; i < p->count; i++) {
            const uint64_t *s = p->slots + i * BLOCK_PACKED_WORDS;
            if (!BLOCK_IS_LIVE(s[0]))
                continue;
            struct block_slot b = block_unpack(p->base, s[0], s[1]);
            struct event ev = { b.addr, b.number * 2, b.word };
            if (bucket_count(counts, bucket_of(counts, b.addr)) == counted)
                count_live(v, &ev, &exact);
            else
                copy_shared(&ev, out, n++, first, shared, shared_count);
        }
        sum->blocks += exact.blocks;
        sum->bytes += exact.bytes;
        return n;
    }
    struct block_slot b;
    for (struct part_cursor c = part_start(p); part_next(p, &c, &b);) {
        struct event ev = { b.addr, b.number * 2 + p->freed, b.word };
        if (bucket_count(counts, bucket_of(counts, b.addr)) == counted)
            count_live(v, &ev, sum);
        else
            copy_shared(&ev, out, n++, first, shared, shared_count);
    }
    return n;
}

/* One region array of a table as a part. A logged array's flag and its
 * region are set before it is published, and never change. */
static struct table_part array_part(const struct block_array *a, bool packed, bool freed)
{
    bool logged = packed && a->logged;
    return (struct table_part){ a->slots, logged ? block_log_entries(a->capacity) : a->capacity, packed, freed,
                                packed ? a->number_base : 0, logged ? a : NULL };
}

/* A row: the origins that differ only by thread, summed (the peak's sum is an
 * upper bound: the parts may have peaked at different times); one origin per
 * row when rows are asked for by thread. */
struct report_row {
    uint64_t key;                   /* the first origin's: site and thread */
    uint32_t chain;                 /* canonical chain id + 1 */
    uint32_t ruby_line;
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
    uintptr_t pa = ORIGIN_SITE(a->key), pb = ORIGIN_SITE(b->key);
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

/* The chain above a thread's origin, interned into the report's own table
 * (pc, caller's id + 1) so that equal stacks of two threads are one: its
 * id + 1, 0 for none, UINT32_MAX when out of memory. */
static uint32_t canonical_chain(struct thread_view *v, uint32_t link, struct intern_table *frames)
{
    /* Up to the first caller already interned (or the outermost), then
     * intern back down. */
    uint32_t path[HEAP_MAX_FRAMES], depth = 0, above = 0;
    for (uint32_t id = link; id;) {
        if (id - 1 >= v->origin_count || depth == HEAP_MAX_FRAMES)
            return 0;
        if (v->chain[id - 1]) {
            above = v->chain[id - 1];
            break;
        }
        path[depth++] = id - 1;
        id = ORIGIN_CALLER(v->origins[id - 1].link);
    }
    while (depth-- > 0) {
        uint32_t g = intern_put(frames, v->origins[path[depth]].key, above);
        if (g == INTERN_NONE)
            return UINT32_MAX;
        above = v->chain[path[depth]] = g + 1;
    }
    return above;
}

/* The program's path, read once for the process (a report of thousands of
 * the program's sites made a readlink each): the path at the first report.
 * A report that finds it not read yet, or being read (another thread, or
 * the one a signal interrupted), reads it for itself. No malloc. */
static struct {
    int state;                /* 0 unread, 1 being read, 2 read */
    size_t len;
    char path[4096];
} program_path;

static void write_program_path(struct out *o)
{
    if (__atomic_load_n(&program_path.state, __ATOMIC_ACQUIRE) == 2) {
        out_bytes(o, program_path.path, program_path.len);
        return;
    }
    char exe[sizeof program_path.path];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe);
    size_t n = len > 0 ? (size_t)len : 0;
    out_bytes(o, exe, n);
    int unread = 0;
    if (n && __atomic_compare_exchange_n(&program_path.state, &unread, 1, false, __ATOMIC_ACQUIRE,
                                         __ATOMIC_RELAXED)) {
        memcpy(program_path.path, exe, n);
        program_path.len = n;
        __atomic_store_n(&program_path.state, 2, __ATOMIC_RELEASE);
    }
}

/* "0xADDRESS object+0xOFFSET" for a code address. */
void heap_write_site(struct out *o, uintptr_t site, const struct elf_object *objects, size_t n)
{
    out_hex(o, site);
    out_char(o, ' ');
    const struct elf_object *obj = elf_objects_find(objects, n, site - 1);
    if (!obj) {
        out_str(o, "?");
        return;
    }
    if (*obj->name)
        out_str(o, obj->name);
    else   /* the program: its path */
        write_program_path(o);
    out_char(o, '+');
    out_hex(o, site - obj->base);
}

static void write_row(struct out *o, const struct report_row *row, bool by_thread,
                      const struct intern_table *frames, const struct elf_object *objects, size_t object_count)
{
    const struct site_stats *s = &row->sum;
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
    heap_write_site(o, ORIGIN_SITE(row->key), objects, object_count);
    out_char(o, '\n');
    for (uint32_t parent = row->chain; parent && parent != UINT32_MAX;) {
        const struct intern_tuple *t = intern_get(frames, parent - 1);
        out_str(o, "  from ");
        heap_write_site(o, (uintptr_t)t->a, objects, object_count);
        out_char(o, '\n');
        parent = (uint32_t)t->b;
    }
    /* How many of the frames are allocation wrappers: the first frame after
     * them is the one the row is charged to. */
    uint64_t wrapped = 0;
    if (heap_wrappers_contain(ORIGIN_SITE(row->key))) {
        wrapped = 1;
        for (uint32_t parent = row->chain; parent && parent != UINT32_MAX; wrapped++) {
            const struct intern_tuple *t = intern_get(frames, parent - 1);
            if (!heap_wrappers_contain((uintptr_t)t->a))
                break;
            parent = (uint32_t)t->b;
        }
    }
    if (wrapped) {
        out_str(o, "  wrapped ");
        out_u64(o, wrapped);
        out_char(o, '\n');
    }
    if (row->ruby_line) {
        out_str(o, "  ruby ");
        heap_ruby_write(o, row->ruby_line);
        out_char(o, '\n');
    }
    if (by_thread) {
        out_str(o, "  thread ");
        out_u64(o, ORIGIN_THREAD(row->key));
        out_char(o, '\n');
    }
}

/* The thread that held `serial`: its tid and its name (as it exited, or
 * as /proc says now). From its identity; else, when that could not be
 * kept, from a record it holds now; else unknown (tid 0, no name). */
static pid_t serial_thread(uint32_t serial, char name[16])
{
    const struct heap_identity *id = heap_identity_of(serial);
    if (id && !__atomic_load_n(&id->tid, __ATOMIC_ACQUIRE))
        id = NULL;   /* never written: the identities were mapped after this serial's thread began */
    const struct heap_thread *t = NULL;
    for (t = __atomic_load_n(&heap.threads, __ATOMIC_ACQUIRE); !id && t; t = t->next)
        if (__atomic_load_n(&t->serial, __ATOMIC_RELAXED) == serial)
            break;
    pid_t tid = id ? id->tid : t ? t->tid : 0;
    bool exited = id ? __atomic_load_n(&id->exited, __ATOMIC_ACQUIRE)
                     : !t || __atomic_load_n(&t->exited, __ATOMIC_ACQUIRE);
    memset(name, 0, 16);
    if (!exited)
        tasks_name(tid, name);
    else if (id || t)
        memcpy(name, id ? id->name : t->name, 15);
    return tid;
}

/* "# thread SERIAL TID live_count live_bytes total_count NAME", per thread
 * that allocated, in the order they started. */
static void write_thread(struct out *o, uint32_t serial, const struct site_stats *sum)
{
    char name[16];
    pid_t tid = serial_thread(serial, name);
    out_str(o, "# thread ");
    out_u64(o, serial);
    out_char(o, ' ');
    out_u64(o, (uint64_t)tid);
    out_char(o, ' ');
    out_u64(o, sum->live_count);
    out_char(o, ' ');
    out_u64(o, sum->live_bytes);
    out_char(o, ' ');
    out_u64(o, sum->total_count);
    out_char(o, ' ');
    out_str(o, *name ? name : "-");
    out_char(o, '\n');
}

/* Memory the report takes for itself, in one list to give back. */
#define REPORT_PARTS 16   /* a report takes 11 */
struct report_memory {
    struct { void *p; size_t bytes; } parts[REPORT_PARTS];
    unsigned count;
};

/* `filled`: every page mapped now (an array about to be written through);
 * else each page when first touched (an array that may stay mostly unused). */
static void *report_alloc_as(struct report_memory *m, size_t bytes, bool filled)
{
    if (m->count == REPORT_PARTS)
        return NULL;
    void *p = filled ? pages_alloc_filled(bytes ? bytes : 1) : pages_alloc(bytes ? bytes : 1);
    if (p) {
        m->parts[m->count].p = p;
        m->parts[m->count++].bytes = bytes ? bytes : 1;
    }
    return p;
}

static void *report_alloc(struct report_memory *m, size_t bytes)
{
    return report_alloc_as(m, bytes, true);
}

static void report_free(struct report_memory *m)
{
    while (m->count-- > 0)
        pages_free(m->parts[m->count].p, m->parts[m->count].bytes);
}

/* The thread of events[e]. */
static struct thread_view *view_of(struct thread_view *view, size_t views, size_t e)
{
    size_t lo = 0, hi = views;   /* the last view whose run starts at or before e */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (view[mid].first_event <= e)
            lo = mid;
        else
            hi = mid;
    }
    return &view[lo];
}

/* Whether events[a] comes after events[b] at their address: a later number,
 * else a later thread (in one thread's run, the first read stays). */
static bool event_later(const struct event *events, size_t a, size_t b, struct thread_view *view, size_t views)
{
    if (events[a].order != events[b].order)
        return events[a].order > events[b].order;
    return view_of(view, views, a) > view_of(view, views, b);
}

/* The latest event at each of the addresses shared[] has events at: an
 * open-addressed map from address to its latest event (index + 1) so far;
 * its capacity in *capacity. Over every event, its random reads and writes
 * took 13 of the 18 ms of an exit report of 160,000 blocks; only the events
 * of buckets with more than one come here. NULL when out of memory. */
static uint32_t *latest_events(const struct event *events, const uint32_t *shared, size_t n,
                               struct thread_view *view, size_t views, size_t *capacity, struct report_memory *mem)
{
    size_t cap = 1024;
    while (cap < n * 2)
        cap *= 2;
    uint32_t *map = report_alloc(mem, cap * sizeof *map);
    if (!map)
        return NULL;
    for (size_t k = 0; k < n; k++) {
        size_t e = shared[k];
        size_t i = (size_t)((events[e].addr * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
        while (map[i] && events[map[i] - 1].addr != events[e].addr)
            i = (i + 1) & (cap - 1);
        if (!map[i] || event_later(events, e, map[i] - 1, view, views))
            map[i] = (uint32_t)e + 1;
    }
    *capacity = cap;
    return map;
}

/* A sampled block stands for more (heap_sample.h): its weight summed in
 * fixed point, rounded per origin. */
static __attribute__((noinline)) void count_live_sampled(struct thread_view *v, uint32_t origin, uint64_t size,
                                                         struct live_sum *sum)
{
    uint64_t bytes = sample_scaled_bytes(size, sum->sample);
    v->live[origin].live_count += sample_weight(size, sum->sample);
    v->live[origin].live_bytes += bytes;
    sum->blocks++;
    sum->bytes += bytes;
}

/* The event that decides its address: a block held is live. Inline: a
 * report counts a million blocks of a grown heap here. */
static inline __attribute__((always_inline)) void count_live(struct thread_view *v, const struct event *ev,
                                                             struct live_sum *sum)
{
    if (ev->order & 1)
        return;
    uint32_t origin = BLOCK_WORD_ORIGIN(ev->word);
    if (origin >= v->origin_count)
        return;   /* newer than what the report read of the thread */
    uint64_t size = BLOCK_WORD_SIZE(ev->word);
    if (__builtin_expect(sum->sample != 0, 0)) {
        count_live_sampled(v, origin, size, sum);
        return;
    }
    v->live[origin].live_count++;
    v->live[origin].live_bytes += size;
    sum->blocks++;
    sum->bytes += size;
}

/* google-pprof's heap profile (the text format of gperftools' heap
 * profiler): a header with the totals, a line per row with its stack, then
 * the memory map, from which pprof finds the files to name the addresses. */
static void write_pprof_row(struct out *o, const struct report_row *row, const struct intern_table *frames)
{
    const struct site_stats *s = &row->sum;
    out_u64(o, s->live_count);
    out_str(o, ": ");
    out_u64(o, s->live_bytes);
    out_str(o, " [");
    out_u64(o, s->total_count);
    out_str(o, ": ");
    out_u64(o, s->total_bytes);
    /* pprof takes the first address as a pc and the callers' as return
     * addresses: the site is a return address too, so its call is a byte
     * before. */
    out_str(o, "] @ ");
    out_hex(o, ORIGIN_SITE(row->key) - 1);
    for (uint32_t parent = row->chain; parent && parent != UINT32_MAX;) {
        const struct intern_tuple *t = intern_get(frames, parent - 1);
        out_char(o, ' ');
        out_hex(o, (uintptr_t)t->a);
        parent = (uint32_t)t->b;
    }
    out_char(o, '\n');
}

static void write_pprof(struct out *o, const struct report_row *rows, size_t shown,
                        const struct intern_table *frames)
{
    struct site_stats all = { 0 };
    for (size_t r = 0; r < shown; r++)
        add_stats(&all, &rows[r].sum);
    out_str(o, "heap profile: ");
    out_u64(o, all.live_count);
    out_str(o, ": ");
    out_u64(o, all.live_bytes);
    out_str(o, " [");
    out_u64(o, all.total_count);
    out_str(o, ": ");
    out_u64(o, all.total_bytes);
    out_str(o, "] @ heapprofile\n");
    for (size_t r = 0; r < shown; r++)
        write_pprof_row(o, &rows[r], frames);
    out_str(o, "\nMAPPED_LIBRARIES:\n");
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    char buf[4096];
    ssize_t n;
    while (fd >= 0 && (n = read(fd, buf, sizeof buf)) > 0)
        out_bytes(o, buf, (size_t)n);
    if (fd >= 0)
        close(fd);
}

/* A thread's tables as the report reads them, in the order blocks move:
 * young slots first (a block moves from there to the older table), its
 * leaving slots (newest first), then the older table's region arrays, its
 * spill's (a block that no longer packs moves there as its region grows),
 * the freed table's. */
static size_t view_parts(const struct thread_view *v)
{
    return 2 + v->array_count[BLOCKS] + v->array_count[SPILL] + v->array_count[FREED];
}

/* A run of `count` wide slots (young, leaving, or the view's copy of these). */
static struct table_part slots_part(const struct block_slot *slots, size_t count)
{
    return (struct table_part){ (const uint64_t *)slots, count, false, false, 0, NULL };
}

/* The leaving slots copied into the view, newest first (slot leaving_next
 * is the next filled, so the oldest), when the report comes to them. */
static void copy_ring(struct thread_view *v)
{
    const struct heap_thread *t = v->thread;
    struct table_part ring = slots_part(&t->young[YOUNG_SLOTS], LEAVING_SLOTS);
    unsigned next = __atomic_load_n(&t->leaving_next, __ATOMIC_RELAXED);
    for (unsigned j = 0; j < LEAVING_SLOTS; j++)
        if (!part_block(&ring, (next - 1 - j) & (LEAVING_SLOTS - 1), &v->ring[j]))
            v->ring[j].addr = BLOCK_EMPTY;
}

static struct table_part view_part(const struct thread_view *v, size_t k)
{
    if (k == 0)
        return slots_part(v->thread->young, YOUNG_SLOTS);
    if (k == 1)
        return slots_part(v->ring, LEAVING_SLOTS);
    k -= 2;
    size_t table = 0;
    while (k >= v->array_count[table])
        k -= v->array_count[table++];
    return array_part(v->arrays[table][k], table == BLOCKS, table == FREED);
}

/* A thread's table: BLOCKS, SPILL or FREED. */
static const struct block_table *thread_table(const struct heap_thread *t, size_t k)
{
    return k == BLOCKS ? &t->blocks : k == SPILL ? &t->blocks_spill : &t->freed;
}

/* How many regions a thread's tables have now. */
static size_t view_regions(const struct thread_view *v)
{
    size_t n = 0;
    for (size_t k = 0; k < TABLES; k++) {
        const struct block_directory *d = block_table_directory(thread_table(v->thread, k));
        for (size_t i = 0; block_directory_next(d, &i);)
            n++;
    }
    return n;
}

/* Each table's directory, then each of its regions' arrays, loaded once,
 * in the order blocks move (a block that stops packing is put in the spill
 * before its region's new array is published: the spill's directory is
 * loaded after the older table's arrays), into room[] of `left`; how many
 * it took. Regions added since they were counted take the room's slack
 * (their blocks are newer than the report, but for a block moving to a new
 * region of the spill); past it they stay unread. */
static size_t view_arrays(struct thread_view *v, const struct block_array **room, size_t left)
{
    size_t taken = 0;
    for (size_t k = 0; k < TABLES; k++) {
        const struct block_directory *d = block_table_directory(thread_table(v->thread, k));
        const struct block_array *a;
        v->arrays[k] = room + taken;
        v->array_count[k] = 0;
        for (size_t i = 0; taken < left && (a = block_directory_next(d, &i));) {
            room[taken++] = a;
            v->array_count[k]++;
        }
    }
    return taken;
}

/* The view whose older table has the most slots. */
static size_t biggest_view(const struct thread_view *view, size_t views)
{
    size_t big = 0, most = 0;
    for (size_t i = 0; i < views; i++) {
        size_t slots = 0;
        for (size_t k = 0; k < view[i].array_count[BLOCKS]; k++)
            slots += view[i].arrays[BLOCKS][k]->capacity;
        if (slots > most)
            most = slots, big = i;
    }
    return big;
}

/* Part k of view i is one of the big table's arrays (view_part's order). */
static bool big_part(size_t big, size_t i, const struct thread_view *v, size_t k)
{
    return i == big && k >= 2 && k < 2 + v->array_count[BLOCKS];
}

/* The tables at rest: their addresses by bucket, then each block alone in
 * its bucket counted from its slot, the others copied as events. A table
 * holds an address once, so the largest older table's addresses need no
 * count of their own: read once instead of twice, a program of one thread
 * that grows its heap has its blocks decoded once. */
static void read_at_rest(struct thread_view *view, size_t views, struct bucket_counts *counts, struct live_sum *sum,
                         struct event *events, uint32_t *shared, size_t *shared_count)
{
    size_t big = biggest_view(view, views);
    struct block_table *big_table = views ? &view[big].thread->blocks : NULL;
    for (size_t i = 0; i < views; i++)
        copy_ring(&view[i]);
    for (size_t i = 0; i < views; i++)
        for (size_t k = 0, m = view_parts(&view[i]); k < m; k++) {
            struct table_part p = view_part(&view[i], k);
            if (!big_part(big, i, &view[i], k))
                add_addresses(&p, counts, big_table);
        }
    size_t n = 0;
    for (size_t i = 0; i < views; i++) {
        struct thread_view *v = &view[i];
        v->first_event = n;
        for (size_t k = 0, m = view_parts(v); k < m; k++) {
            struct table_part p = view_part(v, k);
            unsigned counted = big_part(big, i, v, k) ? 0 : 1;
            n += count_or_copy(v, &p, counts, counted, sum, events + n, n, shared, shared_count);
        }
        v->events = n - v->first_event;
    }
}

/* The tables as their owners may change them: each slot copied whole as an
 * event and its address counted by bucket, then the events alone in their
 * buckets counted, the others' places to shared[]. */
static void read_running(struct thread_view *view, size_t views, struct bucket_counts *counts,
                         struct live_sum *sum, struct event *events, uint32_t *shared, size_t *shared_count)
{
    size_t n = 0;
    for (size_t i = 0; i < views; i++) {
        view[i].first_event = n;
        for (size_t k = 0, m = view_parts(&view[i]); k < m; k++) {
            if (k == 1)   /* after the young slots: a block leaving one is in the ring before it is emptied */
                copy_ring(&view[i]);
            struct table_part p = view_part(&view[i], k);
            n += read_slots(&p, counts, events + n);
        }
        view[i].events = n - view[i].first_event;
    }
    for (size_t i = 0; i < views; i++)
        for (size_t e = view[i].first_event; e < view[i].first_event + view[i].events; e++) {
            if (bucket_count(counts, bucket_of(counts, events[e].addr)) == 1)
                count_live(&view[i], &events[e], sum);
            else
                shared[(*shared_count)++] = (uint32_t)e;
        }
}

/* Whether an address in a thread's young or leaving slots is held twice:
 * by another of those slots or (may be) by its tables. A block freed unseen
 * and made again at its address is not looked for in the tables when it is
 * made; the older one is dropped when the newer leaves its young slot, and
 * until then both are counted as the owner's. */
static bool young_held_twice(struct heap_thread *t)
{
    for (size_t i = 0; i < YOUNG_HELD; i++) {
        uintptr_t addr = t->young[i].addr;
        if (!BLOCK_IS_LIVE(addr))
            continue;
        if (i >= YOUNG_SLOTS && heap_young_slot(t, addr)->addr == addr)
            return true;
        for (size_t k = YOUNG_SLOTS; k < i; k++)
            if (t->young[k].addr == addr)
                return true;
        if (block_table_may_hold(&t->blocks, addr) ||
            (t->blocks_spill.count && block_table_may_hold(&t->blocks_spill, addr)))
            return true;
    }
    return false;
}

/* A region, and which thread's tables or young and leaving slots have
 * blocks in it (a directory keeps its regions: had), and which freed blocks
 * there it did not hold (NONE, a view's index, or MANY). */
struct region_use {
    uint64_t key;
    uint32_t holder, freer;
};

enum { NONE = UINT32_MAX, MANY = UINT32_MAX - 1 };

/* Region `key` used by view `i`, holding or freeing, in `map` (mask + 1
 * entries, *distinct of them taken): false when another view holds blocks
 * there too, or the map is a quarter full (then the caller reads block by
 * block). */
static bool use_region(struct region_use *map, size_t mask, size_t *distinct, uint64_t key, uint32_t i, bool freed)
{
    size_t h = (size_t)(key * 0x9E3779B97F4A7C15ull >> 20) & mask;
    while (map[h].key && map[h].key != key)
        h = (h + 1) & mask;
    struct region_use *u = &map[h];
    if (!u->key) {
        if (++*distinct > (mask + 1) / 4)
            return false;
        *u = (struct region_use){ key, NONE, NONE };
    }
    if (freed) {
        u->freer = u->freer == NONE || u->freer == i ? i : MANY;
        return true;
    }
    if (u->holder != NONE && u->holder != i)
        return false;
    u->holder = i;
    return true;
}

/* Whether the threads' blocks keep apart, at rest: no region in the tables
 * or young slots of two threads, and none where a thread freed a block it
 * did not hold while another holds blocks there. Then no thread's block was
 * freed by another, nor made again by another after a free unseen, and
 * each owner's figures stand alone. glibc gives each of a few threads an
 * arena of its own: heap.c's two threads keep apart. The map is sized by
 * the tables' regions (a thread's young blocks are mostly in its tables'
 * regions too): 16 bytes a region, four times over. */
static bool threads_apart(const struct thread_view *view, size_t views, struct report_memory *mem)
{
    size_t regions = 0, capacity = 4096, distinct = 0;
    for (size_t i = 0; i < views; i++)
        regions += view_regions(&view[i]);
    while (capacity < regions * 4)
        capacity *= 2;
    struct region_use *map = report_alloc(mem, capacity * sizeof *map);
    if (!map)
        return false;
    memset(map, 0, capacity * sizeof *map);
    for (uint32_t i = 0; i < views; i++) {
        for (size_t k = 0; k < TABLES; k++) {
            const struct block_directory *d = block_table_directory(thread_table(view[i].thread, k));
            for (size_t r = 0; d && r < d->capacity; r++) {
                uint64_t key = __atomic_load_n(&d->regions[r].key, __ATOMIC_ACQUIRE);
                if (key && !use_region(map, capacity - 1, &distinct, key, i, k == FREED))
                    return false;
            }
        }
        for (size_t s = 0; s < YOUNG_HELD; s++) {
            uintptr_t addr = view[i].thread->young[s].addr;
            if (BLOCK_IS_LIVE(addr) && !use_region(map, capacity - 1, &distinct, block_region_key(addr), i, false))
                return false;
        }
    }
    for (size_t h = 0; h < capacity; h++)
        if (map[h].key && map[h].holder != NONE && map[h].freer != NONE && map[h].freer != map[h].holder)
            return false;
    return true;
}

/* At rest and exact, the owners' own live figures are the report's when
 * every thread's blocks keep apart from the others' (one thread, or
 * threads_apart: no free can have been of another thread's block, nor a
 * block made again by another thread), every look-up found what it looked
 * for, and no block is held twice (young_held_twice). Then a report of a
 * heap of millions of blocks reads their origins, not each block. */
static bool owners_exact(const struct thread_view *view, size_t views, struct report_memory *mem)
{
    for (size_t i = 0; i < views; i++)
        if (view[i].thread->blocks.lookups_failed || young_held_twice(view[i].thread))
            return false;
    return views == 1 || threads_apart(view, views, mem);
}

static void owners_live(struct thread_view *view, size_t views, struct live_sum *sum)
{
    for (size_t i = 0; i < views; i++)
        for (size_t id = 0; id < view[i].origin_count; id++) {
            struct heap_live live = heap_origin_live(&view[i].origins[id]);
            view[i].live[id].live_count = live.count;
            view[i].live[id].live_bytes = live.bytes;
            sum->blocks += live.count;
            sum->bytes += live.bytes;
        }
}

/* What every thread had published, and which of its blocks are live now:
 * *view[views] with each origin's live count and bytes, *live_blocks and
 * *live_bytes in all. */
static enum memprof_status read_live(struct report_memory *mem, struct thread_view **view_out, size_t *views_out,
                                     size_t *live_blocks_out, uint64_t *live_bytes_out, bool *owners_out)
{
    /* The threads, oldest first; what each had published. */
    size_t views = 0;
    struct heap_thread *newest = __atomic_load_n(&heap.threads, __ATOMIC_SEQ_CST);
    for (struct heap_thread *t = newest; t; t = t->next)
        views++;
    struct thread_view *view = report_alloc(mem, views * sizeof *view);
    if (!view)
        return MEMPROF_NO_MEMORY;
    size_t i = views, origins = 0, slots = 0, regions = 0;
    for (struct heap_thread *t = newest; t; t = t->next) {
        struct thread_view *v = &view[--i];
        v->thread = t;
        v->origin_count = __atomic_load_n(&t->origin_count, __ATOMIC_SEQ_CST);
        struct origin_array *a = __atomic_load_n(&t->origins, __ATOMIC_SEQ_CST);
        v->origins = a ? a->records : NULL;
        if (!a)
            v->origin_count = 0;
        origins += v->origin_count;
        /* Each directory, then each region's array, loaded once: the
         * events are sized by them and read from them (a copy its owner
         * publishes later stays unread; readers.h keeps these mapped). */
        regions += view_regions(v);
    }
    size_t room_left = regions + regions / 8 + 256;
    const struct block_array **room = report_alloc(mem, room_left * sizeof *room);
    if (!room)
        return MEMPROF_NO_MEMORY;
    for (i = 0; i < views; i++) {
        struct thread_view *v = &view[i];
        size_t taken = view_arrays(v, room, room_left);
        room += taken;
        room_left -= taken;
        for (size_t k = 0, m = view_parts(v); k < m; k++)
            slots += view_part(v, k).count;
    }
    struct site_stats *live = report_alloc(mem, origins * sizeof *live);
    uint32_t *chain = report_alloc(mem, origins * sizeof *chain);
    if (!live || !chain)
        return MEMPROF_NO_MEMORY;
    for (i = 0; i < views; i++) {
        view[i].live = live;
        view[i].chain = chain;
        live += view[i].origin_count;
        chain += view[i].origin_count;
    }
    *view_out = view;
    *views_out = views;
    struct live_sum sum = { .sample = heap_tracer_sample_bytes() };
    bool at_rest = tables_at_rest(newest);
    *owners_out = at_rest && !sum.sample && owners_exact(view, views, mem);
    if (*owners_out) {
        owners_live(view, views, &sum);
        *live_blocks_out = sum.blocks;
        *live_bytes_out = sum.bytes;
        return MEMPROF_OK;
    }
    /* Four buckets an event: few addresses share one. */
    size_t buckets = 4096;
    while (buckets < slots * 4)
        buckets *= 2;
    struct bucket_counts counts = { report_alloc(mem, buckets / 4), buckets - 1 };
    /* At rest only the blocks that share a bucket become events: mapped as
     * they are written. */
    struct event *events = report_alloc_as(mem, slots * sizeof *events, !at_rest);
    uint32_t *shared = report_alloc_as(mem, (slots ? slots : 1) * sizeof *shared, false);
    if (!counts.bits || !events || !shared)
        return MEMPROF_NO_MEMORY;
    /* The last event at each address decides: the only one in its bucket
     * at once, the others through the map. */
    size_t shared_count = 0;
    if (at_rest)
        read_at_rest(view, views, &counts, &sum, events, shared, &shared_count);
    else
        read_running(view, views, &counts, &sum, events, shared, &shared_count);
    size_t map_capacity;
    uint32_t *last = latest_events(events, shared, shared_count, view, views, &map_capacity, mem);
    if (!last)
        return MEMPROF_NO_MEMORY;
    for (size_t m = 0; m < map_capacity; m++)
        if (last[m])
            count_live(view_of(view, views, last[m] - 1), &events[last[m] - 1], &sum);
    for (i = 0; sum.sample && i < views; i++)
        for (size_t id = 0; id < view[i].origin_count; id++)
            view[i].live[id].live_count = (view[i].live[id].live_count + SAMPLE_WEIGHT_ONE / 2) / SAMPLE_WEIGHT_ONE;
    *live_blocks_out = sum.blocks;
    *live_bytes_out = sum.bytes;
    return MEMPROF_OK;
}

static enum memprof_status report_locked(struct out *o, unsigned long top, bool by_thread,
                                      enum heap_format format, struct report_memory *mem,
                                      struct intern_table *frames, struct intern_table *groups,
                                      uint64_t *live_bytes_out, size_t *live_blocks_out)
{
    struct thread_view *view;
    size_t views, live_blocks, i;
    uint64_t live_bytes;
    bool owners;
    enum memprof_status status = read_live(mem, &view, &views, &live_blocks, &live_bytes, &owners);
    if (status != MEMPROF_OK)
        return status;
    *live_bytes_out = live_bytes;
    *live_blocks_out = live_blocks;
    size_t origins = 0;
    for (i = 0; i < views; i++)
        origins += view[i].origin_count;

    /* Rows: a thread's origins joined with the same site, stack and Ruby
     * line of every other thread (or kept apart, by thread). */
    struct report_row *rows = report_alloc(mem, (origins ? origins : 1) * sizeof *rows);
    if (!rows)
        return MEMPROF_NO_MEMORY;
    size_t row_count = 0;
    unsigned long dropped = 0;
    /* The threads' own lines, by serial: a record holds the origins of
     * every thread that held it (heap_records.c). */
    uint32_t serials = heap_serials();
    struct site_stats *by_serial = report_alloc_as(mem, (serials + 1) * sizeof *by_serial, false);
    if (!by_serial)
        return MEMPROF_NO_MEMORY;
    for (i = 0; i < views; i++) {
        struct thread_view *v = &view[i];
        dropped += __atomic_load_n(&v->thread->dropped, __ATOMIC_RELAXED);
        for (uint32_t id = 0; id < v->origin_count; id++) {
            const struct heap_origin *r = &v->origins[id];
            if (!ORIGIN_THREAD(r->key))
                continue;   /* a caller in a chain, not a site */
            uint32_t link = ORIGIN_CALLER(r->link), ruby_line = ORIGIN_RUBY_LINE(r->link);
            uint32_t canon = link ? canonical_chain(v, link, frames) : 0;
            if (canon == UINT32_MAX)
                return MEMPROF_NO_MEMORY;
            uint32_t g = intern_put(groups, by_thread ? r->key : ORIGIN_SITE(r->key),
                                    canon | (uint64_t)ruby_line << 32);
            if (g == INTERN_NONE)
                return MEMPROF_NO_MEMORY;
            if (g == row_count)
                rows[row_count++] = (struct report_row){ .key = r->key, .chain = canon, .ruby_line = ruby_line };
            struct site_stats s = {
                .live_count = v->live[id].live_count,
                .live_bytes = v->live[id].live_bytes,
                .total_count = __atomic_load_n(&r->total_count, __ATOMIC_RELAXED),
                .total_bytes = __atomic_load_n(&r->total_bytes, __ATOMIC_RELAXED),
                .peak_bytes = __atomic_load_n(&r->peak_bytes, __ATOMIC_RELAXED),
            };
            /* The owner's peak misses frees by other threads (an upper
             * bound); it is never below what lives now. */
            if (s.peak_bytes < s.live_bytes)
                s.peak_bytes = s.live_bytes;
            add_stats(&rows[g].sum, &s);
            if (ORIGIN_THREAD(r->key) <= serials)   /* else a thread newer than the count read */
                add_stats(&by_serial[ORIGIN_THREAD(r->key)], &s);
        }
    }
    size_t shown = 0;
    for (size_t r = 0; r < row_count; r++)
        if (rows[r].sum.live_count || format == HEAP_FORMAT_TEXT_ALL)
            rows[shown++] = rows[r];
    sort_items(rows, shown, sizeof *rows, report_row_cmp, NULL);
    if (format == HEAP_FORMAT_PPROF) {
        write_pprof(o, rows, shown, frames);
        return MEMPROF_OK;
    }

    struct elf_object *objects = report_alloc(mem, 256 * sizeof *objects);
    if (!objects)
        return MEMPROF_NO_MEMORY;
    size_t object_count = elf_objects_snapshot(objects, 256);
    if (object_count > 256)
        object_count = 256;
    out_str(o, "# memprof heap: live blocks by call site (count bytes peak_bytes total_count total_bytes site object+offset)\n");
    out_str(o, "# pid ");
    out_u64(o, (uint64_t)getpid());
    out_str(o, "\n# frames ");
    out_u64(o, (uint64_t)heap_tracer_frames());
    if (heap_tracer_sample_bytes()) {
        out_str(o, "\n# sample ");
        out_u64(o, heap_tracer_sample_bytes());
    }
    out_str(o, "\n# wrappers ");
    out_str(o, heap_wrappers_patterns());
    out_char(o, '\n');
    unsigned long held, table_bytes;
    heap_tracer_usage(&held, &table_bytes);
    out_str(o, "# tables ");
    out_u64(o, live_blocks);
    out_char(o, ' ');
    out_u64(o, table_bytes);
    out_str(o, " (live blocks, bytes of memprof's tables and per-thread state)\n");
    uint64_t walked, remembered;
    heap_tracer_stacks(&walked, &remembered);
    if (walked || remembered) {
        out_str(o, "# stacks ");
        out_u64(o, walked);
        out_char(o, ' ');
        out_u64(o, remembered);
        out_str(o, " (walked, found again from the last walk at their entry)\n");
    }
    uint64_t grown = heap_tracer_grown_direct();
    if (grown) {
        out_str(o, "# direct ");
        out_u64(o, grown);
        out_str(o, " (blocks put straight in the older table, past the young slots, in windows of 8192: a heap that grew)\n");
    }
    if (owners) {
        out_str(o, "# owners ");
        out_u64(o, views);
        out_str(o, " (the live figures are the threads' own records, read at rest: no block read)\n");
    }
    for (uint32_t serial = 1; serial <= serials; serial++)
        if (by_serial[serial].total_count)
            write_thread(o, serial, &by_serial[serial]);
    for (size_t r = 0; r < shown && (!top || r < top); r++)
        write_row(o, &rows[r], by_thread, frames, objects, object_count);
    heap_custom_warnings(o);
    if (dropped) {
        out_str(o, "# warning: ");
        out_u64(o, dropped);
        out_str(o, " allocations were not recorded (out of memory)\n");
    }
    return MEMPROF_OK;
}

/* The tables held still for reading (try-locks only: false when a hook or
 * another report holds one), and let go. */
static bool begin_reading(void)
{
    if (!spin_trylock_report(&heap.report_lock))
        return false;
    if (!heap_ruby_lock_for_report()) {
        spin_unlock(&heap.report_lock);
        return false;
    }
    readers_enter();
    return true;
}

static void end_reading(void)
{
    readers_leave();
    heap_ruby_unlock();
    spin_unlock(&heap.report_lock);
}

enum memprof_status heap_tracer_report_totals(struct out *o, unsigned long top, bool by_thread,
                                              enum heap_format format, uint64_t *live_bytes, size_t *live_blocks)
{
    if (!begin_reading())
        return MEMPROF_BUSY;
    struct report_memory mem = { 0 };
    struct intern_table frames = { 0 }, groups = { 0 };
    enum memprof_status status =
        report_locked(o, top, by_thread, format, &mem, &frames, &groups, live_bytes, live_blocks);
    end_reading();
    intern_free(&frames);
    intern_free(&groups);
    report_free(&mem);
    return status;
}

enum memprof_status heap_tracer_report_as(struct out *o, unsigned long top, bool by_thread, enum heap_format format)
{
    uint64_t bytes;
    size_t blocks;
    return heap_tracer_report_totals(o, top, by_thread, format, &bytes, &blocks);
}

enum memprof_status heap_tracer_live(uint64_t *bytes, size_t *blocks)
{
    if (!begin_reading())
        return MEMPROF_BUSY;
    struct report_memory mem = { 0 };
    struct thread_view *view;
    size_t views;
    bool owners;
    enum memprof_status status = read_live(&mem, &view, &views, blocks, bytes, &owners);
    end_reading();
    report_free(&mem);
    return status;
}

enum memprof_status heap_tracer_report(struct out *o, unsigned long top, bool by_thread)
{
    return heap_tracer_report_as(o, top, by_thread, HEAP_FORMAT_TEXT);
}

/* --- one block: memprof-where ------------------------------------------------ */

/* The live block that holds `addr`, in one part of a thread's tables; the
 * latest. */
static bool holding_block(const struct table_part *p, uintptr_t addr, struct block_slot *best)
{
    bool found = false;
    struct block_slot b;
    for (struct part_cursor c = part_start(p); part_next(p, &c, &b);) {
        if (addr < b.addr)
            continue;
        uint64_t size = BLOCK_WORD_SIZE(b.word);
        if (addr - b.addr < (size ? size : 1) && (!best->addr || b.number > best->number)) {
            *best = b;
            found = true;
        }
    }
    return found;
}

/* The live block that holds `addr` in a table's region arrays; the latest. */
static bool holding_in_table(const struct block_table *t, bool packed, uintptr_t addr, struct block_slot *best)
{
    const struct block_directory *d = block_table_directory(t);
    const struct block_array *a;
    bool found = false;
    for (size_t i = 0; (a = block_directory_next(d, &i));) {
        struct table_part p = array_part(a, packed, false);
        found |= holding_block(&p, addr, best);
    }
    return found;
}

/* A free of `start` by a thread that did not hold it, after `number`. */
static bool freed_since(uintptr_t start, uint64_t number)
{
    for (struct heap_thread *t = __atomic_load_n(&heap.threads, __ATOMIC_ACQUIRE); t; t = t->next) {
        const struct block_directory *d = block_table_directory(&t->freed);
        const struct block_array *a;
        struct block_slot b;
        for (size_t i = 0; (a = block_directory_next(d, &i));) {
            struct table_part p = array_part(a, false, true);
            for (size_t k = 0; k < p.count; k++)
                if (part_block(&p, k, &b) && b.addr == start && b.number >= number)
                    return true;
        }
    }
    return false;
}

static void where_locked(struct out *o, uintptr_t addr, bool *found)
{
    struct block_slot best = { BLOCK_EMPTY, 0, 0 };
    struct heap_thread *owner = NULL;
    for (struct heap_thread *t = __atomic_load_n(&heap.threads, __ATOMIC_ACQUIRE); t; t = t->next) {
        /* its held blocks: young and leaving alike (the latest number wins), older, spilled */
        struct table_part young = slots_part(t->young, YOUNG_HELD);
        bool holds = holding_block(&young, addr, &best);
        holds |= holding_in_table(&t->blocks, true, addr, &best);
        holds |= holding_in_table(&t->blocks_spill, false, addr, &best);
        if (holds)
            owner = t;
    }
    if (!best.addr || freed_since(best.addr, best.number))
        return;
    uint32_t origin = BLOCK_WORD_ORIGIN(best.word);
    size_t origins = __atomic_load_n(&owner->origin_count, __ATOMIC_ACQUIRE);
    const struct origin_array *records = __atomic_load_n(&owner->origins, __ATOMIC_ACQUIRE);
    if (!records || origin >= origins)
        return;
    *found = true;
    struct elf_object objects[256];
    size_t n = elf_objects_snapshot(objects, 256);
    n = n > 256 ? 256 : n;
    const struct heap_origin *r = &records->records[origin];
    out_hex(o, addr);
    out_str(o, ": in a C heap block of ");
    out_u64(o, BLOCK_WORD_SIZE(best.word));
    out_str(o, " bytes at ");
    out_hex(o, best.addr);
    char name[16];
    out_str(o, ", allocated by thread ");
    out_u64(o, ORIGIN_THREAD(r->key));
    out_str(o, " (tid ");
    out_u64(o, (uint64_t)serial_thread(ORIGIN_THREAD(r->key), name));
    out_str(o, ") at ");
    heap_write_site(o, ORIGIN_SITE(r->key), objects, n);
    out_char(o, '\n');
    uint32_t depth = 0;
    for (uint32_t id = ORIGIN_CALLER(r->link); id && id - 1 < origins && depth < HEAP_MAX_FRAMES; depth++) {
        const struct heap_origin *c = &records->records[id - 1];
        out_str(o, "  from ");
        heap_write_site(o, (uintptr_t)c->key, objects, n);
        out_char(o, '\n');
        id = ORIGIN_CALLER(c->link);
    }
    if (ORIGIN_RUBY_LINE(r->link)) {
        out_str(o, "  ruby ");
        heap_ruby_write(o, ORIGIN_RUBY_LINE(r->link));
        out_char(o, '\n');
    }
}

enum memprof_status heap_tracer_where(struct out *o, uintptr_t addr, bool *found)
{
    *found = false;
    if (!begin_reading())
        return MEMPROF_BUSY;
    where_locked(o, addr, found);
    end_reading();
    return MEMPROF_OK;
}

/* --- live bytes by call site, for the timeline ------------------------------- */

/* Each origin's live bytes as its owner counts them (heap_thread.h), summed
 * by call site over the threads and callers; no lock, only the readers'
 * announcement that keeps the arrays mapped. */
size_t heap_tracer_site_bytes(struct heap_site_scratch *scratch, struct heap_site_bytes *top, size_t k,
                              uint64_t *total)
{
    *total = 0;
    readers_enter();
    size_t origins = 0;
    struct heap_thread *newest = __atomic_load_n(&heap.threads, __ATOMIC_SEQ_CST);
    for (struct heap_thread *t = newest; t; t = t->next)
        origins += __atomic_load_n(&t->origin_count, __ATOMIC_SEQ_CST);
    size_t capacity = 64;
    while (capacity < origins * 2)
        capacity *= 2;
    size_t bytes = scratch->capacity * sizeof *scratch->map;
    if (capacity > scratch->capacity) {
        void *map = scratch->map;
        if (!pages_grow(&map, &bytes, capacity * sizeof *scratch->map, capacity * sizeof *scratch->map)) {
            readers_leave();
            return 0;
        }
        scratch->map = map;
        scratch->capacity = bytes / sizeof *scratch->map;
    }
    capacity = scratch->capacity;   /* a power of two: pages_grow doubles */
    memset(scratch->map, 0, capacity * sizeof *scratch->map);
    for (struct heap_thread *t = newest; t; t = t->next) {
        size_t n = __atomic_load_n(&t->origin_count, __ATOMIC_SEQ_CST);
        const struct origin_array *a = __atomic_load_n(&t->origins, __ATOMIC_SEQ_CST);
        for (size_t i = 0; a && i < n && i < a->capacity; i++) {
            const struct heap_origin *r = &a->records[i];
            if (!ORIGIN_THREAD(r->key))
                continue;   /* a caller in a chain */
            uint64_t live = heap_origin_live(r).bytes;
            if (!live)
                continue;
            uintptr_t site = ORIGIN_SITE(r->key);
            size_t h = (site * 0x9E3779B97F4A7C15ull) & (capacity - 1);
            while (scratch->map[h].site && scratch->map[h].site != site)
                h = (h + 1) & (capacity - 1);
            scratch->map[h].site = site;
            scratch->map[h].bytes += live;
            *total += live;
        }
    }
    readers_leave();
    /* The k largest, by insertion: k is small. */
    size_t kept = 0;
    for (size_t h = 0; h < capacity; h++) {
        const struct heap_site_bytes *e = &scratch->map[h];
        if (!e->site || (kept == k && e->bytes <= top[k - 1].bytes))
            continue;
        size_t at = kept < k ? kept++ : k - 1;
        while (at > 0 && top[at - 1].bytes < e->bytes) {
            top[at] = top[at - 1];
            at--;
        }
        top[at] = *e;
    }
    return kept;
}
