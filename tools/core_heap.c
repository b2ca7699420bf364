/* The C heap tracer's tables read from a core (core_image.h), written as the
 * runtime writes its raw report (trace/heap_report.c), for the same naming
 * code (heap_report_symbolize). doc/tables.md says how they are read. */
#include "core_image.h"
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define MAX_THREADS 65536
#define MAX_CAPACITY (UINT64_C(1) << 28)
#define MAX_ORIGINS (UINT64_C(1) << 24)

struct hold {
    uint64_t addr, order, word;
    uint32_t thread;
};

struct origin_sum {
    uint64_t site, live_count, live_bytes, peak, total_count, total_bytes;
};

static int by_addr_then_order(const void *a, const void *b)
{
    const struct hold *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    if (x->order != y->order)
        return x->order < y->order ? -1 : 1;
    return x->thread < y->thread ? -1 : x->thread > y->thread;
}

static int by_site(const void *a, const void *b)
{
    const struct origin_sum *x = a, *y = b;
    return x->site < y->site ? -1 : x->site > y->site;
}

static int by_live_bytes(const void *a, const void *b)
{
    const struct origin_sum *x = a, *y = b;
    if (x->live_bytes != y->live_bytes)
        return x->live_bytes > y->live_bytes ? -1 : 1;
    return x->site < y->site ? -1 : x->site > y->site;
}

/* A table's slots (young, blocks or freed) as events. */
static bool read_slots(struct core_image *c, const struct memprof_tables *t, uint64_t at, uint64_t count, uint32_t thread,
                       bool freed, struct hold **events, size_t *n, size_t *cap)
{
    if (count > MAX_CAPACITY)
        return core_fail(c, "%s: a block table of %" PRIu64 " slots: damaged", c->path, count);
    unsigned char *slots = malloc(count * t->slot_size + 1);
    if (!slots)
        return core_fail(c, "out of memory");
    bool ok = core_read(c, at, slots, count * t->slot_size, "a block table");
    for (uint64_t i = 0; ok && i < count; i++) {
        uint64_t addr, number, word;
        memcpy(&addr, slots + i * t->slot_size + t->slot_addr, 8);
        memcpy(&number, slots + i * t->slot_size + t->slot_number, 8);
        memcpy(&word, slots + i * t->slot_size + t->slot_word, 8);
        if (!addr || (addr & 1))
            continue;   /* empty, or a tombstone */
        if (*n == *cap) {
            *cap = *cap ? *cap * 2 : 4096;
            struct hold *grown = realloc(*events, *cap * sizeof **events);
            if (!grown) {
                ok = core_fail(c, "out of memory");
                break;
            }
            *events = grown;
        }
        (*events)[(*n)++] = (struct hold){ addr, number * 2 + freed, word, thread };
    }
    free(slots);
    return ok;
}

struct thread_read {
    uint32_t serial;
    int32_t tid;
    uint64_t origins;        /* the origin array's records */
    uint64_t origin_count;
    struct origin_sum *sums; /* [origin_count] */
};

bool core_heap_raw(struct core_image *c, FILE *out)
{
    const struct memprof_tables *t = &c->tables;
    uint64_t next;
    if (!core_read_u64(c, t->heap_threads, &next, "the heap tracer's threads"))
        return false;
    struct thread_read *threads = NULL;
    size_t thread_count = 0, cap = 0, n = 0;
    struct hold *events = NULL;
    bool ok = true;
    unsigned char *thread = malloc(t->thread_size);
    if (!thread)
        return core_fail(c, "out of memory");
    while (next && ok) {
        if (thread_count == MAX_THREADS) {
            ok = core_fail(c, "%s: more than %d heap threads, or a loop: damaged", c->path, MAX_THREADS);
            break;
        }
        if (!(ok = core_read(c, next, thread, t->thread_size, "a heap thread")))
            break;
        struct thread_read *grown = realloc(threads, (thread_count + 1) * sizeof *threads);
        if (!grown) {
            ok = core_fail(c, "out of memory");
            break;
        }
        threads = grown;
        struct thread_read *r = &threads[thread_count];
        memset(r, 0, sizeof *r);
        memcpy(&r->serial, thread + t->thread_serial, 4);
        memcpy(&r->tid, thread + t->thread_tid, 4);
        uint32_t view = (uint32_t)thread_count++;
        ok = read_slots(c, t, next + t->thread_young, t->young_slots, view, false, &events, &n, &cap);
        for (int table = 0; ok && table < 2; table++) {
            uint64_t array, capacity;
            memcpy(&array, thread + (table ? t->thread_freed : t->thread_blocks) + t->table_array, 8);
            if (array && (ok = core_read_u64(c, array + t->array_capacity, &capacity, "a block table's capacity")))
                ok = read_slots(c, t, array + t->array_slots, capacity, view, table == 1, &events, &n, &cap);
        }
        uint64_t origins;
        memcpy(&origins, thread + t->thread_origins, 8);
        memcpy(&r->origin_count, thread + t->thread_origin_count, 8);
        if (ok && origins) {
            uint64_t capacity;
            ok = core_read_u64(c, origins, &capacity, "an origin array");
            if (ok && (r->origin_count > capacity || capacity > MAX_ORIGINS))
                ok = core_fail(c, "%s: %" PRIu64 " origins in an array of %" PRIu64 ": damaged", c->path, r->origin_count,
                          capacity);
            r->origins = origins + t->origin_array_records;
        } else {
            r->origin_count = 0;
        }
        if (ok && r->origin_count && !(r->sums = calloc(r->origin_count, sizeof *r->sums)))
            ok = core_fail(c, "out of memory");
        memcpy(&next, thread + t->thread_next, 8);
    }
    free(thread);
    /* Each origin's counters, and which of its blocks live: at each address
     * the last event (by number, then the newer thread) decides. */
    unsigned char origin[256];
    for (size_t i = 0; ok && i < thread_count; i++) {
        for (uint64_t k = 0; ok && k < threads[i].origin_count; k++) {
            if (!(ok = core_read(c, threads[i].origins + k * t->origin_size, origin, t->origin_size, "an origin")))
                break;
            struct origin_sum *s = &threads[i].sums[k];
            uint64_t key;
            memcpy(&key, origin + t->origin_key, 8);
            s->site = key >> t->thread_shift ? key & ((UINT64_C(1) << t->thread_shift) - 1) : 0;
            memcpy(&s->total_count, origin + t->origin_total_count, 8);
            memcpy(&s->total_bytes, origin + t->origin_total_bytes, 8);
            memcpy(&s->peak, origin + t->origin_peak_bytes, 8);
        }
    }
    if (ok)
        qsort(events, n, sizeof *events, by_addr_then_order);
    size_t live_blocks = 0;
    for (size_t e = 0; ok && e < n; e++) {
        if (e + 1 < n && events[e + 1].addr == events[e].addr)
            continue;   /* a later event at this address decides */
        if (events[e].order & 1)
            continue;   /* freed */
        struct thread_read *r = &threads[events[e].thread];
        uint64_t o = events[e].word >> t->word_size_bits;
        if (o >= r->origin_count)
            continue;
        r->sums[o].live_count++;
        r->sums[o].live_bytes += events[e].word & ((UINT64_C(1) << t->word_size_bits) - 1);
        live_blocks++;
    }
    /* Rows: the origins of one site, from every thread, together. */
    size_t total = 0;
    for (size_t i = 0; i < thread_count; i++)
        total += threads[i].origin_count;
    struct origin_sum *rows = ok ? calloc(total ? total : 1, sizeof *rows) : NULL;
    size_t row_count = 0;
    if (ok && !rows)
        ok = core_fail(c, "out of memory");
    for (size_t i = 0; ok && i < thread_count; i++)
        for (uint64_t k = 0; k < threads[i].origin_count; k++)
            if (threads[i].sums[k].site && threads[i].sums[k].live_count) {
                struct origin_sum *r = &rows[row_count++];
                *r = threads[i].sums[k];
                /* The owner's peak misses frees by other threads; it is
                 * never below what lives now (as the runtime's report). */
                if (r->peak < r->live_bytes)
                    r->peak = r->live_bytes;
            }
    if (ok) {
        qsort(rows, row_count, sizeof *rows, by_site);
        size_t kept = 0;
        for (size_t i = 0; i < row_count; i++) {
            struct origin_sum *r = &rows[i], *into = kept ? &rows[kept - 1] : NULL;
            if (into && into->site == r->site) {
                into->live_count += r->live_count, into->live_bytes += r->live_bytes;
                into->total_count += r->total_count, into->total_bytes += r->total_bytes;
                into->peak += r->peak;
            } else {
                rows[kept++] = *r;
            }
        }
        row_count = kept;
        qsort(rows, row_count, sizeof *rows, by_live_bytes);
        fprintf(out, "# memprof heap: live blocks by call site (count bytes peak_bytes total_count total_bytes site "
                     "object+offset)\n# pid %ld\n# frames 1\n# tables %zu 0\n",
                c->notes.pid, live_blocks);
        /* "# thread SERIAL TID live_count live_bytes total_count NAME", oldest
         * first, as the runtime writes them; a core keeps no thread's name. */
        for (size_t i = thread_count; i-- > 0;) {
            uint64_t count = 0, bytes = 0, allocs = 0;
            for (uint64_t k = 0; k < threads[i].origin_count; k++) {
                count += threads[i].sums[k].live_count;
                bytes += threads[i].sums[k].live_bytes;
                allocs += threads[i].sums[k].site ? threads[i].sums[k].total_count : 0;
            }
            if (allocs)
                fprintf(out, "# thread %u %d %" PRIu64 " %" PRIu64 " %" PRIu64 " ?\n", threads[i].serial,
                        threads[i].tid, count, bytes, allocs);
        }
        for (size_t i = 0; i < row_count; i++) {
            const struct origin_sum *r = &rows[i];
            fprintf(out, "%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " 0x%" PRIx64 " ", r->live_count,
                    r->live_bytes, r->peak, r->total_count, r->total_bytes, r->site);
            const char *object;
            uint64_t bias;
            if (core_object(c, r->site, &object, &bias))
                fprintf(out, "%s+0x%" PRIx64 "\n", object, r->site - bias);
            else
                fputs("?\n", out);
        }
    }
    free(rows);
    for (size_t i = 0; i < thread_count; i++)
        free(threads[i].sums);
    free(threads);
    free(events);
    return ok;
}

