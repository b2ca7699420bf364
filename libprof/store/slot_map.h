/* Records of objects that live in equal slots inside aligned pages: a
 * garbage-collected heap (CRuby 3.1: 16 KiB pages of 40-byte slots, each slot
 * at a multiple of 40). A record is found by page, then by slot: 8 bytes per
 * slot of a page that holds any record, no key stored, and the records of
 * objects allocated one after another are neighbours in memory (a hash keyed
 * by address would cost a cache miss per allocation).
 * mmap'd memory only; not locked: the owner serializes access. */
#ifndef MEMPROF_STORE_SLOT_MAP_H
#define MEMPROF_STORE_SLOT_MAP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct slot_entry {
    uintptr_t key;     /* the object's address */
    uint32_t origin;   /* tracer-defined (an interned id: where it came from) */
    uint32_t aux;      /* tracer-defined (Ruby: type and epoch) */
};

struct slot_record { uint32_t origin_plus_one, aux; };  /* 0: no record */

struct slot_page {
    uintptr_t base;               /* 0: empty bucket */
    struct slot_record *records;
};

struct slot_map {
    size_t page_size, slot_size, slots_per_page;
    uint64_t slot_reciprocal;     /* ceil(2^32 / slot_size): a division is 40 cycles */
    struct slot_page *pages;      /* open-addressed by base */
    size_t page_mask, page_count;
    size_t count;                 /* records held */
    struct slot_page *last;       /* the page used last: usually the next one;
                                     never NULL (slot_map_no_page) */
    void *chunks;                 /* mmap'd chunks the record arrays come from */
    size_t chunk_used, chunk_bytes, chunk_total;
    size_t chunk_filled;          /* bytes of the chunk mapped ahead (new_records) */
};

enum slot_put_result { SLOT_PUT_NEW, SLOT_PUT_REPLACED, SLOT_PUT_NO_MEMORY };

/* The page `last` is before one is used: its base is no page's, so a hook
 * compares bases without testing for NULL first. */
extern struct slot_page slot_map_no_page;

/* An empty map for pages of `page_size` bytes (a power of two) holding slots
 * of `slot_size` bytes. */
void slot_map_init(struct slot_map *m, size_t page_size, size_t slot_size);
enum slot_put_result slot_map_put(struct slot_map *m, uintptr_t key, uint32_t origin, uint32_t aux);
/* The page `key` is in. */
static inline uintptr_t slot_map_page_base(const struct slot_map *m, uintptr_t key)
{
    return key & ~(uintptr_t)(m->page_size - 1);
}
/* The slot of `key` in its page: offset / slot_size by multiplication,
 * exact since the offset is below the page size (far below 2^32) and
 * offset / slot_size is never closer to the next integer than 1 / slot_size. */
static inline size_t slot_map_index(const struct slot_map *m, uintptr_t key)
{
    return (size_t)(((uint64_t)(key & (m->page_size - 1)) * m->slot_reciprocal) >> 32);
}
static inline enum slot_put_result slot_map_write(struct slot_map *m, struct slot_record *r, uint32_t origin,
                                                  uint32_t aux)
{
    enum slot_put_result result = r->origin_plus_one ? SLOT_PUT_REPLACED : SLOT_PUT_NEW;
    if (result == SLOT_PUT_NEW)
        m->count++;
    *r = (struct slot_record){ origin + 1, aux };
    return result;
}
/* The record of `key` in its page `p`, written (slot_map_put's last step). */
static inline enum slot_put_result slot_map_put_in(struct slot_map *m, struct slot_page *p, uintptr_t key,
                                                   uint32_t origin, uint32_t aux)
{
    return slot_map_write(m, &p->records[slot_map_index(m, key)], origin, aux);
}
/* The same for a map whose geometry the caller knows when it is compiled
 * (the map's own): the division by a constant is then a multiplication the
 * compiler picks, with no load. */
static inline enum slot_put_result slot_map_put_in_fixed(struct slot_map *m, struct slot_page *p, uintptr_t key,
                                                         uint32_t origin, uint32_t aux, size_t page_size,
                                                         size_t slot_size)
{
    /* 32 bits: a page is far smaller, and GCC's 64-bit division by a
     * constant is a longer chain (a 64-bit mul and its constant). */
    return slot_map_write(m, &p->records[(uint32_t)(key & (page_size - 1)) / (uint32_t)slot_size], origin, aux);
}
/* slot_map_put, inlined for a key in the page used last (an allocator's
 * next object usually is). */
static inline enum slot_put_result slot_map_put_near(struct slot_map *m, uintptr_t key, uint32_t origin,
                                                     uint32_t aux)
{
    struct slot_page *p = m->last;
    if (__builtin_expect(p->base != slot_map_page_base(m, key), 0))
        return slot_map_put(m, key, origin, aux);
    return slot_map_put_in(m, p, key, origin, aux);
}
bool slot_map_get(const struct slot_map *m, uintptr_t key, struct slot_entry *out);
/* The record in `r` forgotten, if it holds one. */
static inline bool slot_map_forget(struct slot_map *m, struct slot_record *r)
{
    if (!r->origin_plus_one)
        return false;
    r->origin_plus_one = 0;
    m->count--;
    return true;
}
/* Forget the record of `key`, if any; its page becomes the one used last. */
bool slot_map_remove(struct slot_map *m, uintptr_t key);
/* slot_map_remove, inlined for a key in the page used last. */
static inline void slot_map_remove_near(struct slot_map *m, uintptr_t key)
{
    struct slot_page *p = m->last;
    if (__builtin_expect(p->base != slot_map_page_base(m, key), 0))
        slot_map_remove(m, key);
    else
        slot_map_forget(m, &p->records[slot_map_index(m, key)]);
}
/* Forget the records of every page inside [lo, hi): memory given back to
 * the system, whose addresses may next hold anything. */
void slot_map_drop_pages(struct slot_map *m, uintptr_t lo, uintptr_t hi);
/* Call `fn` for every record, in no particular order. */
void slot_map_each(const struct slot_map *m, void (*fn)(const struct slot_entry *e, void *ctx),
                   void *ctx);
/* Re-key every record by `where(entry)` (objects a compacting GC moved). A
 * record whose key moved wins over one that stayed at the address it moved
 * to. 0, or -1 when out of memory (the map is then unchanged). */
int slot_map_remap(struct slot_map *m, uintptr_t (*where)(const struct slot_entry *e, void *ctx),
                   void *ctx);
/* Forget every record (the geometry stays). */
void slot_map_clear(struct slot_map *m);
size_t slot_map_bytes(const struct slot_map *m);
#endif
