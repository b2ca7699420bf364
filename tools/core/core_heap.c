/* The C heap tracer's tables read from a core (core_image.h), written as the
 * runtime writes its raw report (trace/heap_report.c), for the same naming
 * code (heap_report_symbolize); and who allocated the block holding an
 * address (as heap_tracer_where). doc/tables.md says how they are read. */
#include "core_image.h"
#include "trace/heap/heap_sample.h"
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define MAX_THREADS 65536
#define MAX_CAPACITY (UINT64_C(1) << 28)
#define MAX_ORIGINS (UINT64_C(1) << 24)
#define MAX_FRAMES 64     /* HEAP_MAX_FRAMES: callers in a chain */
#define ARRAY_TRIES 16    /* an array replaced while read, read again (read_table) */

/* A block slot as an event at an address: a hold (order even) or a free
 * (odd), ordered by the block's number. */
struct event {
    uint64_t addr, order, word;
    uint32_t thread;
    uint32_t age;   /* in one thread, of events with one number: a table's 0, the ring's oldest 1 and newer up,
                       a direct young slot's highest (the newest, memprof_debugger.h) */
};

struct origin {
    uint64_t key, link;
    uint64_t live_count, live_bytes, peak, total_count, total_bytes;
};

struct thread_read {
    uint32_t serial;
    int32_t tid;
    bool exited;
    char name[65];
    uint64_t origin_count;
    struct origin *origins;
};

/* Who held a serial (memprof_debugger.h, version 8): a record may hold the
 * origins of several threads, each with a serial of its own. */
struct identity_read {
    int32_t tid;
    bool exited, known;
    char name[65];
};

struct wrapper_range { uint64_t start, end; };

struct heap_read {
    struct thread_read *threads;   /* newest first, as the runtime links them */
    size_t thread_count;
    struct identity_read *identities;   /* [serials + 1], by serial */
    uint32_t serials;
    struct event *events;          /* by address, then order */
    size_t event_count, event_cap;
    int frames;
    uint64_t sample;               /* mean bytes between samples; 0: exact */
    struct core_sites lines;       /* the Ruby lines of blocks */
    struct wrapper_range *wrappers;
    uint64_t wrapper_count;
    uint64_t live_blocks;
};

static int by_addr_then_order(const void *a, const void *b)
{
    const struct event *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    if (x->order != y->order)
        return x->order < y->order ? -1 : 1;
    if (x->thread != y->thread)
        return x->thread < y->thread ? -1 : 1;
    return x->age < y->age ? -1 : x->age > y->age;
}

/* How a table's slots are read: wide (young, spilled, freed: address,
 * number, word) or packed (the older blocks': key and value, against the
 * array's number base). */
struct slot_format {
    bool packed, freed;
    uint64_t base;
    bool young;              /* a thread's young slots: their events' ages from the ring's next slot */
    uint32_t leaving_next;
};

/* The age of the event in young slot `i` (struct event). */
static uint32_t young_age(const struct memprof_tables *t, uint64_t i, uint32_t leaving_next)
{
    uint32_t ring = t->young_slots - t->young_direct;
    if (i < t->young_direct)
        return ring + 1;
    return 1 + (uint32_t)((i - t->young_direct + ring - leaving_next) % ring);
}

static bool add_event(struct core_image *c, struct heap_read *h, struct event ev)
{
    if (h->event_count == h->event_cap) {
        h->event_cap = h->event_cap ? h->event_cap * 2 : 4096;
        struct event *grown = realloc(h->events, h->event_cap * sizeof *grown);
        if (!grown)
            return core_fail(c, "out of memory");
        h->events = grown;
    }
    h->events[h->event_count++] = ev;
    return true;
}

/* A packed slot's block (memprof_debugger.h, version 5). */
static struct event unpack_slot(const struct memprof_tables *t, uint64_t key, uint64_t value, uint64_t base,
                                uint32_t thread)
{
    uint64_t addr_mask = (UINT64_C(1) << t->packed_addr_bits) - 1;
    uint64_t origin = key >> t->packed_addr_bits |
                      (value & ((UINT64_C(1) << t->packed_origin_high_bits) - 1)) << (64 - t->packed_addr_bits);
    uint64_t size = (value >> t->packed_origin_high_bits) & ((UINT64_C(1) << t->packed_size_bits) - 1);
    uint64_t number = base + (value >> (t->packed_origin_high_bits + t->packed_size_bits));
    return (struct event){ key & addr_mask, number * 2, size | origin << t->word_size_bits, thread, 0 };
}

/* Slots copied out (count of them) as events. */
static bool add_slots(struct core_image *c, struct heap_read *h, const unsigned char *slots, uint64_t count,
                      uint32_t thread, struct slot_format format)
{
    const struct memprof_tables *t = &c->tables;
    size_t size = format.packed ? t->packed_slot_size : t->slot_size;
    bool ok = true;
    for (uint64_t i = 0; ok && i < count; i++) {
        const unsigned char *slot = slots + i * size;
        uint64_t key = core_field_u64(slot, format.packed ? 0 : t->slot_addr);
        if (!key || (key & 1))
            continue;   /* empty, or a tombstone */
        ok = add_event(c, h, format.packed ? unpack_slot(t, key, core_field_u64(slot, 8), format.base, thread)
                                           : (struct event){ key, core_field_u64(slot, t->slot_number) * 2 + format.freed,
                                                             core_field_u64(slot, t->slot_word), thread,
                                                             format.young ? young_age(t, i, format.leaving_next) : 0 });
    }
    return ok;
}

/* A thread's young slots as events. */
static bool read_young(struct core_image *c, struct heap_read *h, uint64_t at, uint32_t thread, uint32_t leaving_next)
{
    const struct memprof_tables *t = &c->tables;
    unsigned char *slots = malloc((size_t)t->young_slots * t->slot_size);
    if (!slots)
        return core_fail(c, "out of memory");
    bool ok = core_read(c, at, slots, (size_t)t->young_slots * t->slot_size, "a heap thread's young slots") &&
              add_slots(c, h, slots, t->young_slots, thread,
                        (struct slot_format){ .young = true, .leaving_next = leaving_next });
    free(slots);
    return ok;
}

/* A logged array's entries (memprof_debugger.h, version 9), copied out, as
 * events, in order up to the first empty one. */
static bool add_log(struct core_image *c, struct heap_read *h, const uint64_t *entries, uint64_t count,
                    uint64_t region, uint32_t thread, uint64_t base)
{
    const struct memprof_tables *t = &c->tables;
    uint64_t number = base;
    uint64_t place_mask = (UINT64_C(1) << t->log_place_bits) - 1, origin_mask = (UINT64_C(1) << t->log_origin_bits) - 1;
    bool ok = true;
    for (uint64_t i = 0; ok && i < count && entries[i]; i++) {
        uint64_t e = entries[i];
        if (!(e & 1)) {
            number = base + (e >> 1) - 1;
            continue;
        }
        uint64_t origin = (e >> (1 + t->log_place_bits)) & origin_mask;
        uint64_t size = e >> (1 + t->log_place_bits + t->log_origin_bits);
        ok = add_event(c, h,
                       (struct event){ region + ((e >> 1) & place_mask) * 8, number * 2,
                                       size | origin << t->word_size_bits, thread, 0 });
    }
    return ok;
}

/* A region's array as copied out: its head, then its slots or its log. */
struct array_copy {
    unsigned char *head;   /* t->array_slots bytes */
    unsigned char *body;
    uint64_t capacity;
    size_t body_bytes;
};

/* Part of an array copied out. In a running process, memory that cannot be
 * read is an array unmapped meanwhile (*changed stays set); in a core, a
 * failure to say. */
static bool array_part(struct core_image *c, uint64_t at, void *out, size_t len, const char *what, bool *changed)
{
    if (c->pid > 0)
        return core_peek(c, at, out, len);
    if (core_read(c, at, out, len, what))
        return true;
    *changed = false;
    return false;
}

/* Parts of an array copied out in order (in one read from a running
 * process), as array_part. */
static bool array_parts(struct core_image *c, const struct core_piece *pieces, size_t count, bool *changed)
{
    if (c->pid > 0)
        return core_peek_pieces(c, pieces, count);
    for (size_t i = 0; i < count; i++)
        if (!array_part(c, pieces[i].addr, pieces[i].out, pieces[i].len, pieces[i].what, changed))
            return false;
    return true;
}

/* One region's array, whose pointer is at `pointer_at` in its directory,
 * copied out as its owner may replace it meanwhile (memprof_debugger.h,
 * version 10): its stamp, the pointer still to it, the array, the stamp
 * again. False with *changed when it was given back meanwhile: its memory
 * then proves nothing, though it may read as an array. */
static bool copy_array(struct core_image *c, uint64_t pointer_at, uint64_t array, struct slot_format format,
                       struct array_copy *a, bool *changed)
{
    const struct memprof_tables *t = &c->tables;
    uint64_t stamp = 0, pointer = 0, stamp_after = 0;
    *changed = true;
    const struct core_piece head[] = {
        { array + t->array_stamp, &stamp, 8, "a block array's stamp" },
        { pointer_at, &pointer, 8, "a block table's directory" },
        { array, a->head, t->array_slots, "a block array" },
    };
    if (!array_parts(c, head, 3, changed))
        return false;
    if (c->pid <= 0 && !(stamp & 1)) {
        *changed = false;
        return core_fail(c, "%s: a block array whose stamp is even (not handed out): damaged", c->path);
    }
    if (!(stamp & 1) || pointer != array)
        return false;
    memcpy(&a->capacity, a->head + t->array_capacity, 8);
    if (a->capacity > MAX_CAPACITY) {
        *changed = false;
        return core_fail(c, "%s: a block array of %" PRIu64 " slots: damaged", c->path, a->capacity);
    }
    size_t bytes = a->capacity * (format.packed ? t->packed_slot_size : t->slot_size);
    if (bytes > a->body_bytes) {
        unsigned char *grown = realloc(a->body, bytes);
        if (!grown) {
            *changed = false;
            return core_fail(c, "out of memory");
        }
        a->body = grown;
        a->body_bytes = bytes;
    }
    const struct core_piece body[] = {
        { array + t->array_slots, a->body, bytes, "a block array" },
        { array + t->array_stamp, &stamp_after, 8, "a block array's stamp" },
    };
    if (!array_parts(c, body, 2, changed) || stamp_after != stamp)
        return false;
    *changed = false;
    return true;
}

/* The array copied out as events. */
static bool add_array(struct core_image *c, struct heap_read *h, const struct array_copy *a, uint32_t thread,
                      struct slot_format format)
{
    const struct memprof_tables *t = &c->tables;
    if (format.packed) {
        memcpy(&format.base, a->head + t->array_number_base, 8);
        if (a->head[t->array_logged]) {
            uint64_t region;
            memcpy(&region, a->head + t->array_region_base, 8);
            return add_log(c, h, (const uint64_t *)(void *)a->body, a->capacity * t->packed_slot_size / 8, region,
                           thread, format.base);
        }
    }
    return add_slots(c, h, a->body, a->capacity, thread, format);
}

/* A block table: its directory's regions, each region's array. A region
 * whose array was replaced while read is read again, up to ARRAY_TRIES
 * times; past them, the read fails as the tables having changed. */
static bool read_table(struct core_image *c, struct heap_read *h, uint64_t directory, uint32_t thread,
                       struct slot_format format)
{
    const struct memprof_tables *t = &c->tables;
    uint64_t capacity;
    if (!directory)
        return true;
    if (!core_read_u64(c, directory + t->directory_capacity, &capacity, "a block table's directory"))
        return false;
    if (capacity > MAX_CAPACITY)
        return core_fail(c, "%s: a block directory of %" PRIu64 " regions: damaged", c->path, capacity);
    unsigned char *regions = malloc(capacity * t->region_size + 1);
    struct array_copy a = { .head = malloc(t->array_slots) };
    if (!regions || !a.head) {
        free(regions);
        free(a.head);
        return core_fail(c, "out of memory");
    }
    bool ok = core_read(c, directory + t->directory_regions, regions, capacity * t->region_size,
                        "a block table's directory");
    for (uint64_t i = 0; ok && i < capacity; i++) {
        uint64_t pointer_at = directory + t->directory_regions + i * t->region_size + t->region_array;
        uint64_t array = core_field_u64(regions + i * t->region_size, t->region_array);
        if (!core_field_u64(regions + i * t->region_size, t->region_key) || !array)
            continue;
        bool changed = true;
        for (unsigned try = 0; ok && changed && try < ARRAY_TRIES; try++) {
            if (try > 0 && !(ok = core_read_u64(c, pointer_at, &array, "a block table's directory")))
                break;
            if (copy_array(c, pointer_at, array, format, &a, &changed))
                ok = add_array(c, h, &a, thread, format);
            else if (!changed)
                ok = false;
        }
        if (ok && changed)
            ok = core_fail(c, "%s: a block array replaced %d times while read (it changed while read)", c->path,
                           ARRAY_TRIES);
    }
    free(regions);
    free(a.head);
    free(a.body);
    return ok;
}

/* A thread's origins: key, link and counters. */
static bool read_origins(struct core_image *c, const unsigned char *thread, struct thread_read *r)
{
    const struct memprof_tables *t = &c->tables;
    uint64_t array = core_field_u64(thread, t->thread_origins), capacity;
    r->origin_count = core_field_u64(thread, t->thread_origin_count);
    if (!array) {
        r->origin_count = 0;
        return true;
    }
    if (!core_read_u64(c, array, &capacity, "an origin array"))
        return false;
    if (r->origin_count > capacity || capacity > MAX_ORIGINS)
        return core_fail(c, "%s: %" PRIu64 " origins in an array of %" PRIu64 ": damaged", c->path, r->origin_count,
                         capacity);
    unsigned char *raw = malloc(r->origin_count * t->origin_size + 1);
    r->origins = calloc(r->origin_count + 1, sizeof *r->origins);
    bool ok = raw && r->origins ? core_read(c, array + t->origin_array_records, raw, r->origin_count * t->origin_size,
                                            "the origins")
                                : core_fail(c, "out of memory");
    for (uint64_t k = 0; ok && k < r->origin_count; k++) {
        const unsigned char *o = raw + k * t->origin_size;
        r->origins[k] = (struct origin){
            .key = core_field_u64(o, t->origin_key),
            .link = core_field_u64(o, t->origin_link),
            .peak = core_field_u64(o, t->origin_peak_bytes),
            .total_count = core_field_u64(o, t->origin_total_count),
            .total_bytes = core_field_u64(o, t->origin_total_bytes),
        };
    }
    free(raw);
    return ok;
}

/* A name as the runtime keeps it (char[thread_name_size]), made one word
 * for the report's line. */
static void thread_name(const struct memprof_tables *t, const unsigned char *raw, char name[65])
{
    memcpy(name, raw, t->thread_name_size);
    name[t->thread_name_size] = '\0';
    for (char *p = name; *p; p++)
        if (*p <= ' ' || *p == 0x7f)
            *p = '_';
}

static uint32_t origin_serial(const struct memprof_tables *t, uint64_t key)
{
    return (uint32_t)(key >> t->thread_shift);
}

/* Who held each serial the records and their origins name. Where the
 * identities cannot be read (a core cut short), a record's own thread is
 * as the record says, and an earlier holder unknown. */
static bool read_identities(struct core_image *c, struct heap_read *h)
{
    const struct memprof_tables *t = &c->tables;
    uint32_t serials = 0;
    for (size_t i = 0; i < h->thread_count; i++) {
        serials = h->threads[i].serial > serials ? h->threads[i].serial : serials;
        for (uint64_t k = 0; k < h->threads[i].origin_count; k++) {
            uint32_t s = origin_serial(t, h->threads[i].origins[k].key);
            serials = s > serials ? s : serials;
        }
    }
    serials = serials < t->identity_max ? serials : t->identity_max;
    if (!(h->identities = calloc((size_t)serials + 1, sizeof *h->identities)))
        return core_fail(c, "out of memory");
    h->serials = serials;
    uint64_t at = 0;
    size_t bytes = ((size_t)serials + 1) * t->identity_size;
    unsigned char *raw = core_peek(c, t->heap_identities, &at, 8) && at ? malloc(bytes) : NULL;
    if (raw && core_peek(c, at, raw, bytes))
        for (uint32_t s = 1; s <= serials; s++) {
            const unsigned char *e = raw + (size_t)s * t->identity_size;
            struct identity_read *id = &h->identities[s];
            memcpy(&id->tid, e + t->identity_tid, 4);
            id->exited = e[t->identity_exited] != 0;
            thread_name(t, e + t->identity_name, id->name);
            id->known = id->tid != 0;
        }
    free(raw);
    for (size_t i = 0; i < h->thread_count; i++) {
        const struct thread_read *r = &h->threads[i];
        struct identity_read *id = r->serial <= serials ? &h->identities[r->serial] : NULL;
        if (id && !id->known) {
            *id = (struct identity_read){ .tid = r->tid, .exited = r->exited, .known = true };
            memcpy(id->name, r->name, sizeof id->name);
        }
    }
    return true;
}

static bool read_threads(struct core_image *c, struct heap_read *h)
{
    const struct memprof_tables *t = &c->tables;
    uint64_t next;
    if (!core_read_u64(c, t->heap_threads, &next, "the heap tracer's threads"))
        return false;
    unsigned char *thread = malloc(t->thread_size);
    bool ok = thread || core_fail(c, "out of memory");
    while (next && ok) {
        if (h->thread_count == MAX_THREADS) {
            ok = core_fail(c, "%s: more than %d heap threads, or a loop: damaged", c->path, MAX_THREADS);
            break;
        }
        if (!(ok = core_read(c, next, thread, t->thread_size, "a heap thread")))
            break;
        struct thread_read *grown = realloc(h->threads, (h->thread_count + 1) * sizeof *grown);
        if (!grown) {
            ok = core_fail(c, "out of memory");
            break;
        }
        h->threads = grown;
        struct thread_read *r = &h->threads[h->thread_count];
        memset(r, 0, sizeof *r);
        memcpy(&r->serial, thread + t->thread_serial, 4);
        memcpy(&r->tid, thread + t->thread_tid, 4);
        r->exited = thread[t->thread_exited] != 0;
        thread_name(t, thread + t->thread_name, r->name);
        uint32_t view = (uint32_t)h->thread_count++;
        uint32_t leaving_next;
        memcpy(&leaving_next, thread + t->thread_leaving_next, 4);
        if (leaving_next >= t->young_slots - t->young_direct) {
            ok = core_fail(c, "%s: a heap thread's leaving slot %" PRIu32 " of %" PRIu32 ": damaged", c->path,
                           leaving_next, t->young_slots - t->young_direct);
            break;
        }
        ok = read_young(c, h, next + t->thread_young, view, leaving_next);
        /* blocks (packed), their spill, freed */
        const uint32_t tables[] = { t->thread_blocks, t->thread_spill, t->thread_freed };
        for (int k = 0; ok && k < 3; k++)
            ok = read_table(c, h, core_field_u64(thread + tables[k], t->table_directory), view,
                            (struct slot_format){ .packed = k == 0, .freed = k == 2 });
        ok = ok && read_origins(c, thread, r);
        next = core_field_u64(thread, t->thread_next);
    }
    free(thread);
    return ok && read_identities(c, h);
}

/* The wrappers' code ranges, and the Ruby lines' table. */
static bool read_extras(struct core_image *c, struct heap_read *h)
{
    const struct memprof_tables *t = &c->tables;
    uint64_t table;
    if (!core_read(c, t->heap_frames, &h->frames, sizeof h->frames, "the frames asked for") ||
        !core_read_u64(c, t->heap_sample_bytes, &h->sample, "the sampling interval") ||
        !core_read_u64(c, t->heap_wrappers, &table, "the wrappers' table"))
        return false;
    if (h->sample > HEAP_SAMPLE_MAX)
        return core_fail(c, "%s: a sampling interval of %" PRIu64 " bytes: damaged", c->path, h->sample);
    if (table) {
        if (!core_read_u64(c, table + t->wrappers_count, &h->wrapper_count, "the wrappers' table"))
            return false;
        if (h->wrapper_count > t->wrappers_max)
            return core_fail(c, "%s: %" PRIu64 " wrapper ranges: damaged", c->path, h->wrapper_count);
        unsigned char *raw = malloc(h->wrapper_count * t->range_size + 1);
        h->wrappers = malloc((h->wrapper_count + 1) * sizeof *h->wrappers);
        bool ok = raw && h->wrappers ? core_read(c, table + t->wrappers_ranges, raw, h->wrapper_count * t->range_size,
                                                 "the wrappers' ranges")
                                     : core_fail(c, "out of memory");
        for (uint64_t i = 0; ok && i < h->wrapper_count; i++)
            h->wrappers[i] = (struct wrapper_range){ core_field_u64(raw + i * t->range_size, t->range_start),
                                                     core_field_u64(raw + i * t->range_size, t->range_end) };
        free(raw);
        if (!ok)
            return false;
    }
    unsigned char *sites = malloc(t->sites_size);
    bool ok = sites ? core_read(c, t->heap_ruby_lines, sites, t->sites_size, "the Ruby lines") &&
                          core_read_sites(c, sites, &h->lines, "the Ruby lines")
                    : core_fail(c, "out of memory");
    free(sites);
    return ok;
}

static void free_heap(struct heap_read *h)
{
    for (size_t i = 0; i < h->thread_count; i++)
        free(h->threads[i].origins);
    free(h->threads);
    free(h->identities);
    free(h->events);
    free(h->wrappers);
    core_sites_free(&h->lines);
}

/* Everything, and which blocks live: at each address the last event (by
 * number, then the newer thread, then in one thread the newer slot) decides. */
static bool read_heap(struct core_image *c, struct heap_read *h)
{
    const struct memprof_tables *t = &c->tables;
    memset(h, 0, sizeof *h);
    if (!read_threads(c, h) || !read_extras(c, h))
        return false;
    qsort(h->events, h->event_count, sizeof *h->events, by_addr_then_order);
    for (size_t e = 0; e < h->event_count; e++) {
        if (e + 1 < h->event_count && h->events[e + 1].addr == h->events[e].addr)
            continue;   /* a later event at this address decides */
        if (h->events[e].order & 1)
            continue;   /* freed */
        struct thread_read *r = &h->threads[h->events[e].thread];
        uint64_t o = h->events[e].word >> t->word_size_bits;
        if (o >= r->origin_count)
            continue;
        uint64_t size = h->events[e].word & ((UINT64_C(1) << t->word_size_bits) - 1);
        /* As the runtime's report: a sampled block's weight (heap_sample.h). */
        r->origins[o].live_count += h->sample ? sample_weight(size, h->sample) : 1;
        r->origins[o].live_bytes += sample_scaled_bytes(size, h->sample);
        h->live_blocks++;
    }
    for (size_t i = 0; h->sample && i < h->thread_count; i++)
        for (size_t o = 0; o < h->threads[i].origin_count; o++)
            h->threads[i].origins[o].live_count =
                (h->threads[i].origins[o].live_count + SAMPLE_WEIGHT_ONE / 2) / SAMPLE_WEIGHT_ONE;
    return true;
}

static uint64_t origin_site(const struct memprof_tables *t, uint64_t key)
{
    return key >> t->thread_shift ? key & ((UINT64_C(1) << t->thread_shift) - 1) : 0;
}

/* Is `pc` in an allocation wrapper's code (heap_wrappers_contain)? */
static bool in_wrapper(const struct heap_read *h, uint64_t pc)
{
    size_t lo = 0, hi = h->wrapper_count;   /* the first range starting above pc */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (h->wrappers[mid].start <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i-- > 0 && lo - i <= 4;)   /* ranges may nest */
        if (pc < h->wrappers[i].end)
            return true;
    return false;
}

/* "0xADDRESS object+0xOFFSET" for a code address. */
static void write_pc(struct core_image *c, FILE *out, uint64_t pc)
{
    const char *object;
    uint64_t bias;
    fprintf(out, "0x%" PRIx64 " ", pc);
    if (core_object(c, pc, &object, &bias))
        fprintf(out, "%s+0x%" PRIx64, object, pc - bias);
    else
        fputc('?', out);
}

/* The callers recorded above an origin, innermost first: how many. */
static size_t origin_chain(const struct thread_read *r, const struct origin *o, uint64_t pcs[MAX_FRAMES])
{
    size_t depth = 0;
    for (uint64_t id = (uint32_t)o->link; id && id - 1 < r->origin_count && depth < MAX_FRAMES;
         id = (uint32_t)r->origins[id - 1].link)
        pcs[depth++] = r->origins[id - 1].key;
    return depth;
}

/* What follows an origin's site line in the raw report: its callers
 * ("  from"), how many frames are wrappers, its Ruby line. */
static char *origin_tail(struct core_image *c, const struct heap_read *h, const struct thread_read *r,
                         const struct origin *o)
{
    const struct memprof_tables *t = &c->tables;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    uint64_t pcs[MAX_FRAMES];
    size_t depth = origin_chain(r, o, pcs);
    for (size_t i = 0; i < depth; i++) {
        fputs("  from ", f);
        write_pc(c, f, pcs[i]);
        fputc('\n', f);
    }
    uint64_t wrapped = 0;
    if (in_wrapper(h, origin_site(t, o->key)))
        for (wrapped = 1; wrapped - 1 < depth && in_wrapper(h, pcs[wrapped - 1]);)
            wrapped++;
    if (wrapped)
        fprintf(f, "  wrapped %" PRIu64 "\n", wrapped);
    uint32_t line = (uint32_t)(o->link >> 32);
    if (line && line - 1 < h->lines.count)
        fprintf(f, "  ruby %s:%u\n", core_site_file(&h->lines, line - 1), core_site_line(&h->lines, line - 1));
    return fclose(f) == 0 ? text : (free(text), NULL);
}

struct row {
    uint64_t site;
    char *tail;
    struct origin sum;
    const struct thread_read *thread;   /* one of the threads, and its origin: the chain */
    const struct origin *origin;
};

static int by_site_and_tail(const void *a, const void *b)
{
    const struct row *x = a, *y = b;
    if (x->site != y->site)
        return x->site < y->site ? -1 : 1;
    return strcmp(x->tail, y->tail);
}

/* Largest live bytes first, then live count, then site (the runtime's order). */
static int by_live_bytes(const void *a, const void *b)
{
    const struct row *x = a, *y = b;
    if (x->sum.live_bytes != y->sum.live_bytes)
        return x->sum.live_bytes > y->sum.live_bytes ? -1 : 1;
    if (x->sum.live_count != y->sum.live_count)
        return x->sum.live_count > y->sum.live_count ? -1 : 1;
    return x->site < y->site ? -1 : x->site > y->site;
}

static void free_rows(struct row *rows, size_t n)
{
    for (size_t i = 0; rows && i < n; i++)
        free(rows[i].tail);
    free(rows);
}

/* Rows: the live origins of every thread with one site, callers and Ruby
 * line, largest first; *n of them. */
static struct row *collect_rows(struct core_image *c, const struct heap_read *h, size_t *n_out)
{
    const struct memprof_tables *t = &c->tables;
    size_t total = 0, n = 0;
    for (size_t i = 0; i < h->thread_count; i++)
        total += h->threads[i].origin_count;
    struct row *rows = calloc(total + 1, sizeof *rows);
    bool ok = rows || core_fail(c, "out of memory");
    for (size_t i = 0; ok && i < h->thread_count; i++) {
        const struct thread_read *r = &h->threads[i];
        for (uint64_t k = 0; ok && k < r->origin_count; k++) {
            const struct origin *o = &r->origins[k];
            uint64_t site = origin_site(t, o->key);
            if (!site)
                continue;   /* a caller in a chain */
            struct row *row = &rows[n++];
            *row = (struct row){ .site = site, .sum = *o, .thread = r, .origin = o };
            /* The owner's peak misses frees by other threads; it is never
             * below what lives now (as the runtime's report). */
            if (row->sum.peak < row->sum.live_bytes)
                row->sum.peak = row->sum.live_bytes;
            if (!(row->tail = origin_tail(c, h, r, o)))
                ok = core_fail(c, "out of memory");
        }
    }
    if (!ok) {
        free_rows(rows, n);
        return NULL;
    }
    qsort(rows, n, sizeof *rows, by_site_and_tail);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        struct row *into = kept ? &rows[kept - 1] : NULL;
        if (into && by_site_and_tail(into, &rows[i]) == 0) {
            into->sum.live_count += rows[i].sum.live_count, into->sum.live_bytes += rows[i].sum.live_bytes;
            into->sum.total_count += rows[i].sum.total_count, into->sum.total_bytes += rows[i].sum.total_bytes;
            into->sum.peak += rows[i].sum.peak;
            free(rows[i].tail);
        } else {
            rows[kept++] = rows[i];
        }
    }
    /* A row of the origins of every thread at a site, as the runtime's:
     * shown when one of them has a live block, with all their totals. */
    size_t shown = 0;
    for (size_t i = 0; i < kept; i++) {
        if (rows[i].sum.live_count)
            rows[shown++] = rows[i];
        else
            free(rows[i].tail);
    }
    kept = shown;
    qsort(rows, kept, sizeof *rows, by_live_bytes);
    *n_out = kept;
    return rows;
}

bool core_heap_raw(struct core_image *c, FILE *out)
{
    const struct memprof_tables *t = &c->tables;
    struct heap_read h;
    bool ok = read_heap(c, &h);
    if (ok) {
        fprintf(out, "# memprof heap: live blocks by call site (count bytes peak_bytes total_count total_bytes site "
                     "object+offset)\n# pid %ld\n# frames %d\n# tables %" PRIu64 " 0\n",
                c->notes.pid, h.frames, h.live_blocks);
        if (h.sample)
            fprintf(out, "# sample %" PRIu64 "\n", h.sample);
        /* "# thread SERIAL TID live_count live_bytes total_count NAME" by
         * serial, oldest first, as the runtime writes them; the name as the
         * runtime kept it (a core has no thread's name). */
        struct origin *by_serial = calloc((size_t)h.serials + 1, sizeof *by_serial);
        ok = by_serial || core_fail(c, "out of memory");
        for (size_t i = 0; ok && i < h.thread_count; i++)
            for (uint64_t k = 0; k < h.threads[i].origin_count; k++) {
                const struct origin *o = &h.threads[i].origins[k];
                uint32_t serial = origin_serial(t, o->key);
                if (!origin_site(t, o->key) || serial > h.serials)
                    continue;   /* a caller in a chain */
                by_serial[serial].live_count += o->live_count;
                by_serial[serial].live_bytes += o->live_bytes;
                by_serial[serial].total_count += o->total_count;
            }
        for (uint32_t s = 1; ok && s <= h.serials; s++)
            if (by_serial[s].total_count)
                fprintf(out, "# thread %u %d %" PRIu64 " %" PRIu64 " %" PRIu64 " %s\n", s, h.identities[s].tid,
                        by_serial[s].live_count, by_serial[s].live_bytes, by_serial[s].total_count,
                        h.identities[s].name[0] ? h.identities[s].name : "?");
        free(by_serial);
        size_t n = 0;
        struct row *rows = ok ? collect_rows(c, &h, &n) : NULL;
        ok = rows != NULL;
        for (size_t i = 0; i < n; i++) {
            const struct origin *s = &rows[i].sum;
            fprintf(out, "%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " ", s->live_count, s->live_bytes,
                    s->peak, s->total_count, s->total_bytes);
            write_pc(c, out, rows[i].site);
            fprintf(out, "\n%s", rows[i].tail);
        }
        free_rows(rows, n);
    }
    free_heap(&h);
    return ok;
}

/* google-pprof's heap profile, as the runtime writes it (trace/heap_report.c):
 * the totals, a line per row with its stack, then the memory map. */
bool core_heap_pprof(struct core_image *c, FILE *out)
{
    struct heap_read h;
    size_t n = 0;
    struct row *rows = read_heap(c, &h) ? collect_rows(c, &h, &n) : NULL;
    if (rows) {
        struct origin all = { 0 };
        for (size_t i = 0; i < n; i++) {
            all.live_count += rows[i].sum.live_count, all.live_bytes += rows[i].sum.live_bytes;
            all.total_count += rows[i].sum.total_count, all.total_bytes += rows[i].sum.total_bytes;
        }
        fprintf(out, "heap profile: %" PRIu64 ": %" PRIu64 " [%" PRIu64 ": %" PRIu64 "] @ heapprofile\n", all.live_count,
                all.live_bytes, all.total_count, all.total_bytes);
        for (size_t i = 0; i < n; i++) {
            const struct origin *s = &rows[i].sum;
            /* The site is a return address: its call is a byte before. */
            fprintf(out, "%" PRIu64 ": %" PRIu64 " [%" PRIu64 ": %" PRIu64 "] @ 0x%" PRIx64, s->live_count,
                    s->live_bytes, s->total_count, s->total_bytes, rows[i].site - 1);
            uint64_t pcs[MAX_FRAMES];
            size_t depth = origin_chain(rows[i].thread, rows[i].origin, pcs);
            for (size_t k = 0; k < depth; k++)
                fprintf(out, " 0x%" PRIx64, pcs[k]);
            fputc('\n', out);
        }
        fputs("\nMAPPED_LIBRARIES:\n", out);
        core_write_maps(c, out);
    }
    free_rows(rows, n);
    free_heap(&h);
    return rows != NULL;
}

bool core_heap_where(struct core_image *c, uint64_t addr, FILE *out, bool *found)
{
    const struct memprof_tables *t = &c->tables;
    struct heap_read h;
    *found = false;
    bool ok = read_heap(c, &h);
    /* Live blocks never overlap: the nearest live one at or below `addr`
     * is the only one that can hold it. */
    size_t lo = 0, hi = h.event_count;
    while (ok && lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (h.events[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t e = lo; ok && e-- > 0;) {
        const struct event *v = &h.events[e];
        if (e + 1 < h.event_count && h.events[e + 1].addr == v->addr)
            continue;   /* not the event that decides */
        if (v->order & 1)
            continue;   /* freed */
        uint64_t size = v->word & ((UINT64_C(1) << t->word_size_bits) - 1), o = v->word >> t->word_size_bits;
        const struct thread_read *r = &h.threads[v->thread];
        if (addr - v->addr >= (size ? size : 1) || o >= r->origin_count)
            break;
        const struct origin *origin = &r->origins[o];
        char *tail = origin_tail(c, &h, r, origin);
        if (!tail) {
            ok = core_fail(c, "out of memory");
            break;
        }
        /* As heap_tracer_where writes it; the wrappers' count is the report's. */
        char *wrapped = strstr(tail, "  wrapped ");
        if (wrapped)
            memmove(wrapped, strchr(wrapped, '\n') + 1, strlen(strchr(wrapped, '\n') + 1) + 1);
        fprintf(out, "0x%" PRIx64 ": in a C heap block of %" PRIu64 " bytes at 0x%" PRIx64
                     ", allocated by thread %u (tid %d) at ",
                addr, size, v->addr, origin_serial(t, origin->key),
                origin_serial(t, origin->key) <= h.serials ? h.identities[origin_serial(t, origin->key)].tid : 0);
        write_pc(c, out, origin_site(t, origin->key));
        fprintf(out, "\n%s", tail);
        free(tail);
        *found = true;
        break;
    }
    free_heap(&h);
    return ok;
}

bool core_heap_threads(struct core_image *c, struct core_heap_thread **out, size_t *n, uint64_t *live_blocks)
{
    const struct memprof_tables *t = &c->tables;
    struct heap_read h;
    *out = NULL;
    *n = 0;
    bool ok = read_heap(c, &h) && ((*out = calloc(h.thread_count + 1, sizeof **out)) || core_fail(c, "out of memory"));
    for (size_t i = 0; ok && i < h.thread_count; i++) {
        struct core_heap_thread *r = &(*out)[(*n)++];
        *r = (struct core_heap_thread){ h.threads[i].tid, h.threads[i].exited, 0, 0 };
        for (uint64_t k = 0; k < h.threads[i].origin_count; k++) {
            const struct origin *o = &h.threads[i].origins[k];
            if (origin_serial(t, o->key) == h.threads[i].serial) {   /* its own thread's site (not a caller in a
                                                                        chain, nor an earlier thread's) */
                r->count += o->total_count;
                r->bytes += o->total_bytes;
            }
        }
    }
    *live_blocks = h.live_blocks;
    free_heap(&h);
    return ok;
}
