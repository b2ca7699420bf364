#include "slot_map.h"
#include "../util/pages.h"
#include <string.h>

#define CHUNK_BYTES ((size_t)1 << 20)

/* Record arrays are carved from 1 MiB chunks; each chunk starts with a link
 * to the previous one, so clearing the map frees them all. */
struct chunk { struct chunk *prev; size_t bytes; };

struct slot_page slot_map_no_page = { .base = UINTPTR_MAX };   /* not a multiple of any page size */

void slot_map_init(struct slot_map *m, size_t page_size, size_t slot_size)
{
    *m = (struct slot_map){ .page_size = page_size, .slot_size = slot_size, .last = &slot_map_no_page,
                            .slots_per_page = (page_size - 1) / slot_size + 1,
                            .slot_reciprocal = (((uint64_t)1 << 32) + slot_size - 1) / slot_size };
}

static size_t bucket_of(const struct slot_map *m, uintptr_t base)
{
    return (size_t)(((uint64_t)base * 0x9E3779B97F4A7C15ull) >> 32) & m->page_mask;
}

/* The address of slot `i` of the page at `base`: slots sit at multiples of
 * the slot size, so slot i is the one multiple in [base + i*size, +size). */
static uintptr_t slot_address(const struct slot_map *m, uintptr_t base, size_t i)
{
    uintptr_t lo = base + i * m->slot_size;
    return lo + (m->slot_size - lo % m->slot_size) % m->slot_size;
}

static struct slot_page *find_page(const struct slot_map *m, uintptr_t base)
{
    if (m->last->base == base)
        return m->last;
    if (!m->pages)
        return NULL;
    for (size_t i = bucket_of(m, base); m->pages[i].base; i = (i + 1) & m->page_mask)
        if (m->pages[i].base == base)
            return &m->pages[i];
    return NULL;
}

static struct slot_record *new_records(struct slot_map *m)
{
    size_t bytes = m->slots_per_page * sizeof(struct slot_record);
    if (!m->chunks || m->chunk_used + bytes > m->chunk_bytes) {
        size_t size = CHUNK_BYTES > bytes + sizeof(struct chunk) ? CHUNK_BYTES : bytes + sizeof(struct chunk);
        struct chunk *c = pages_alloc(size);
        if (!c)
            return NULL;
        *c = (struct chunk){ m->chunks, size };
        m->chunks = c;
        m->chunk_used = sizeof(struct chunk);
        m->chunk_bytes = size;
        m->chunk_total += size;
        m->chunk_filled = 0;
    }
    struct slot_record *r = (struct slot_record *)((char *)m->chunks + m->chunk_used);
    m->chunk_used += (bytes + 15) & ~(size_t)15;
    /* A chunk's record arrays are written in turn as the heap grows, one
     * per heap page: mapped ahead in one call, not a fault a page. */
    pages_fill_ahead(m->chunks, m->chunk_used, &m->chunk_filled, m->chunk_bytes);
    return r;
}

/* Room for one more page in the page index (at most half full). */
static bool reserve_page(struct slot_map *m)
{
    size_t cap = m->pages ? m->page_mask + 1 : 0;
    if (m->pages && (m->page_count + 1) * 2 <= cap)
        return true;
    size_t ncap = cap ? cap * 2 : 1024;
    struct slot_page *n = pages_alloc_filled(ncap * sizeof *n);   /* written all over: mapped at once */
    if (!n)
        return false;
    struct slot_map bigger = *m;
    bigger.pages = n;
    bigger.page_mask = ncap - 1;
    for (size_t i = 0; i < cap; i++) {
        if (!m->pages[i].base)
            continue;
        size_t j = bucket_of(&bigger, m->pages[i].base);
        while (n[j].base)
            j = (j + 1) & bigger.page_mask;
        n[j] = m->pages[i];
    }
    pages_free(m->pages, cap * sizeof *m->pages);
    m->pages = n;
    m->page_mask = ncap - 1;
    m->last = &slot_map_no_page;
    return true;
}

static struct slot_page *add_page(struct slot_map *m, uintptr_t base)
{
    struct slot_record *records = new_records(m);
    if (!records || !reserve_page(m))
        return NULL;
    size_t i = bucket_of(m, base);
    while (m->pages[i].base)
        i = (i + 1) & m->page_mask;
    m->pages[i] = (struct slot_page){ base, records };
    m->page_count++;
    return &m->pages[i];
}

enum slot_put_result slot_map_put(struct slot_map *m, uintptr_t key, uint32_t origin, uint32_t aux)
{
    uintptr_t base = slot_map_page_base(m, key);
    struct slot_page *p = find_page(m, base);
    if (!p && !(p = add_page(m, base)))
        return SLOT_PUT_NO_MEMORY;
    m->last = p;
    return slot_map_put_in(m, p, key, origin, aux);
}

bool slot_map_get(const struct slot_map *m, uintptr_t key, struct slot_entry *out)
{
    const struct slot_page *p = find_page(m, slot_map_page_base(m, key));
    const struct slot_record *r = p ? &p->records[slot_map_index(m, key)] : NULL;
    if (!r || !r->origin_plus_one)
        return false;
    *out = (struct slot_entry){ slot_address(m, p->base, slot_map_index(m, key)),
                                r->origin_plus_one - 1, r->aux };
    return out->key == key;
}

bool slot_map_remove(struct slot_map *m, uintptr_t key)
{
    struct slot_page *p = find_page(m, slot_map_page_base(m, key));
    if (!p)
        return false;
    m->last = p;   /* the next allocations are in it too */
    return slot_map_forget(m, &p->records[slot_map_index(m, key)]);
}

static void drop_page(struct slot_map *m, struct slot_page *p)
{
    for (size_t s = 0; s < m->slots_per_page; s++)
        slot_map_forget(m, &p->records[s]);
}

void slot_map_drop_pages(struct slot_map *m, uintptr_t lo, uintptr_t hi)
{
    if (!m->pages || hi <= lo)
        return;
    /* Every page the range touches; a page stays in the index, empty: its
     * address is often a heap page again soon, and its records reused. */
    uintptr_t first = lo & ~(uintptr_t)(m->page_size - 1);
    if ((hi - first) / m->page_size <= m->page_count) {
        for (uintptr_t base = first; base < hi; base += m->page_size) {
            struct slot_page *p = find_page(m, base);
            if (p)
                drop_page(m, p);
        }
        return;
    }
    for (size_t i = 0; i <= m->page_mask; i++) {
        struct slot_page *p = &m->pages[i];
        if (p->base && p->base >= first && p->base < hi)
            drop_page(m, p);
    }
}

void slot_map_each(const struct slot_map *m, void (*fn)(const struct slot_entry *e, void *ctx),
                   void *ctx)
{
    for (size_t i = 0; m->pages && i <= m->page_mask; i++) {
        const struct slot_page *p = &m->pages[i];
        if (!p->base)
            continue;
        for (size_t s = 0; s < m->slots_per_page; s++) {
            const struct slot_record *r = &p->records[s];
            if (!r->origin_plus_one)
                continue;
            struct slot_entry e = { slot_address(m, p->base, s), r->origin_plus_one - 1, r->aux };
            fn(&e, ctx);
        }
    }
}

void slot_map_clear(struct slot_map *m)
{
    for (struct chunk *c = m->chunks; c;) {
        struct chunk *prev = c->prev;
        pages_free(c, c->bytes);
        c = prev;
    }
    if (m->pages)
        pages_free(m->pages, (m->page_mask + 1) * sizeof *m->pages);
    slot_map_init(m, m->page_size, m->slot_size);
}

struct remap {
    struct slot_map *to;
    uintptr_t (*where)(const struct slot_entry *e, void *ctx);
    void *ctx;
    bool moved_pass, failed;
};

static void remap_one(const struct slot_entry *e, void *ctx)
{
    struct remap *r = ctx;
    uintptr_t key = r->where(e, r->ctx);
    if ((key != e->key) != r->moved_pass || r->failed)
        return;
    if (slot_map_put(r->to, key, e->origin, e->aux) == SLOT_PUT_NO_MEMORY)
        r->failed = true;
}

int slot_map_remap(struct slot_map *m, uintptr_t (*where)(const struct slot_entry *e, void *ctx),
                   void *ctx)
{
    struct slot_map moved;
    slot_map_init(&moved, m->page_size, m->slot_size);
    struct remap r = { &moved, where, ctx, false, false };
    /* Records that stayed first, then the moved ones over them. */
    slot_map_each(m, remap_one, &r);
    r.moved_pass = true;
    slot_map_each(m, remap_one, &r);
    if (r.failed) {
        slot_map_clear(&moved);
        return -1;
    }
    slot_map_clear(m);
    *m = moved;
    return 0;
}

size_t slot_map_bytes(const struct slot_map *m)
{
    return m->chunk_total + (m->pages ? (m->page_mask + 1) * sizeof *m->pages : 0);
}
