#include "block_table.h"
#include "../util/pages.h"
#include <stdbool.h>

#define MIN_DIRECTORY 64

static size_t directory_bytes(size_t capacity)
{
    return sizeof(struct block_directory) + capacity * sizeof(struct block_region);
}

/* The entry of `key` in `d`, or the empty one where it would go. */
static struct block_region *directory_slot(struct block_directory *d, uint64_t key)
{
    for (size_t i = block_index((uintptr_t)key, d->capacity);; i = i + 1 == d->capacity ? 0 : i + 1)
        if (d->regions[i].key == key || d->regions[i].key == 0)
            return &d->regions[i];
}

struct block_region *block_table_find_region(struct block_table *t, uint64_t key)
{
    if (!t->directory)
        return NULL;
    struct block_region *r = directory_slot(t->directory, key);
    if (r->key != key)
        return NULL;
    return t->near[key % NEAR_REGIONS] = r;
}

/* A directory twice as large, its entries copied, published; the old one
 * retired (readers.h). Rare: one entry per 64 KiB of addresses. */
static bool grow_directory(struct block_table *t)
{
    struct block_directory *old = t->directory;
    size_t capacity = old ? old->capacity * 2 : MIN_DIRECTORY;
    struct block_directory *d = pages_alloc(directory_bytes(capacity));
    if (!d)
        return false;
    d->capacity = capacity;
    for (size_t i = 0; old && i < old->capacity; i++)
        if (old->regions[i].key)
            *directory_slot(d, old->regions[i].key) = old->regions[i];
    __atomic_store_n(&t->directory, d, __ATOMIC_SEQ_CST);
    for (size_t i = 0; i < NEAR_REGIONS; i++)
        t->near[i] = NULL;
    if (old)
        readers_retire(&t->retired, old, directory_bytes(old->capacity));
    return true;
}

struct block_region *block_table_add_region(struct block_table *t, uint64_t key)
{
    if ((!t->directory || (t->regions + 1) * 4 > t->directory->capacity * 3) && !grow_directory(t))
        return NULL;
    /* Regions fill alike: a new one starts at the size the last region to
     * grow grew to, which in a heap that grows in order is the size each
     * ends at (their blocks reach the table late and out of order: the
     * young slots), and one size smaller whenever the region made
     * RECENT_REGIONS before it stayed less than a quarter full, or, logged,
     * would have fitted one size smaller (a hashed region before it may have
     * grown the size for its seven eighths). */
    uint64_t *recent = &t->recent[t->regions % RECENT_REGIONS];
    struct block_region *earlier = *recent ? directory_slot(t->directory, *recent) : NULL;
    if (earlier && earlier->key == *recent && t->start_class) {
        const struct block_array *e = earlier->array;
        size_t used = block_array_used(e);
        if (e->logged ? e->size_class > 0 && used <= block_log_entries(block_pool_capacity(e->size_class - 1u))
                      : used < e->capacity / 4)
            t->start_class--;
    }
    *recent = key;
    unsigned size_class = t->start_class;
    struct block_array *a = block_pool_take(&t->pool, size_class, block_table_packed(t));
    if (!a)
        return NULL;
    a->logged = block_table_packed(t) && size_class >= BLOCK_LOGGED_CLASS;
    a->room = block_array_room(a);
    a->region_base = (key - 1) << BLOCK_REGION_SHIFT;
    a->log_number = a->number_base;
    struct block_region *r = directory_slot(t->directory, key);
    r->capacity = (uint32_t)a->capacity;
    r->logged = a->logged;
    __atomic_store_n(&r->array, a, __ATOMIC_RELAXED);
    __atomic_store_n(&r->key, key, __ATOMIC_RELEASE);
    t->regions++;
    return t->near[key % NEAR_REGIONS] = r;
}

/* A block at `addr` about to be spilled: its region's bit set (the bits of
 * blocks gone since the spill was last empty reset first), the cursor
 * given up. */
static void spill_mark(struct block_table *t, uintptr_t addr)
{
    if (t->spill->count == 0)
        t->spill_regions = 0;
    t->spill_regions |= block_spill_bit(addr);
    t->cursor.key = 0;
}

/* A block of the old array into `a`, which does not have its address; or
 * to the spill when it no longer packs (counted there then). A logged `a`
 * takes it next (the old one was logged: its granules are each once, and
 * its blocks took log entries). */
static void copy_block(struct block_table *t, struct block_array *a, const struct block_slot *b)
{
    bool packed = block_table_packed(t);
    uint64_t key = b->addr, value = 0, *place, replaced;
    if (packed && !block_pack(a->number_base, b->addr, b->number, b->word, &key, &value)) {
        /* Written there before the new array is published: a reader finds
         * it once or twice, never not at all. Without memory it is lost,
         * as a put's would be. */
        spill_mark(t, b->addr);
        block_table_put(t->spill, b->addr, b->number, b->word, &replaced);
        t->count--;
        return;
    }
    if (a->logged) {
        block_log_append(a, b->addr, b->number, b->word);
        return;
    }
    uint64_t *twin = block_array_place(a, packed, b->addr, &place);   /* none: an address has one slot */
    if (twin)
        place = twin;
    if (packed)
        block_slot_fill_packed(place, key, value);
    else
        block_slot_fill_wide(place, b->addr, b->number, b->word);
}

/* The old array's blocks, each once: a logged one's in order. */
struct old_blocks {
    const struct block_array *array;
    bool packed;
    size_t i, entries;
    uint64_t number;
};

static inline __attribute__((always_inline)) bool next_old_block(struct old_blocks *o, struct block_slot *b)
{
    const struct block_array *a = o->array;
    if (a->logged)
        return block_log_next(a, o->entries, &o->i, &o->number, b);
    for (; o->i < a->capacity; o->i++) {
        const uint64_t *s = block_array_slot(a, o->packed, o->i);
        if (BLOCK_IS_LIVE(*s)) {
            *b = block_slot_decode(o->packed, a->number_base, *s, s);
            o->i++;
            return true;
        }
    }
    return false;
}

static struct old_blocks old_blocks(const struct block_array *a, bool packed)
{
    return (struct old_blocks){ a, packed, 0, a->logged ? block_array_used(a) : 0, a->number_base };
}

/* The old array's live blocks, counted (a log's block entries: no decoding). */
static size_t live_blocks(const struct block_array *a, bool packed)
{
    size_t live = 0;
    if (a->logged) {
        const uint64_t *entries = (const uint64_t *)a->slots;
        for (size_t i = 0, used = block_array_used(a); i < used; i++)
            live += entries[i] & LOG_BLOCK_BIT;
        return live;
    }
    for (size_t i = 0; i < a->capacity; i++)
        live += BLOCK_IS_LIVE(*block_array_slot(a, packed, i));
    return live;
}

/* How full an array rebuilt may be: three quarters for puts to come,
 * seven eighths for look-ups (block_table_unlog). */
enum rebuild_for { FOR_PUTS, FOR_LOOKUPS };

static size_t rebuilt_full(size_t room, enum rebuild_for why)
{
    return why == FOR_PUTS ? room / 4 * 3 : room / 8 * 7;
}

/* block_table_rebuild into the smallest size, from the old one's on, in
 * which the blocks live (or, into a logged array, the old one's entries:
 * as many again, the numbers' entries with the blocks') and the put to
 * come are no more than rebuilt_full. */
static struct block_array *rebuild_above(struct block_table *t, struct block_region *r, uint64_t number, bool logged,
                                         enum rebuild_for why)
{
    struct block_array *old = r->array;
    bool packed = block_table_packed(t);
    struct block_slot b;
    bool stays_logged = logged && old->logged;
    /* A log into a log: its entries; else its blocks, counted. */
    size_t need = stays_logged ? block_array_used(old) + 2 : live_blocks(old, packed) + 1;
    unsigned size_class = old->size_class;
    for (;;) {
        size_t capacity = block_pool_capacity(size_class);
        bool logs = stays_logged && size_class >= BLOCK_LOGGED_CLASS;
        if (rebuilt_full(logs ? block_log_entries(capacity) : capacity, why) >= need ||
            size_class + 1 >= BLOCK_POOL_CLASSES)
            break;
        size_class++;
    }
    if (size_class > old->size_class && size_class > t->start_class)
        t->start_class = size_class;
    struct block_array *a = block_pool_take(&t->pool, size_class, packed);
    if (!a)
        return NULL;
    a->logged = stays_logged && size_class >= BLOCK_LOGGED_CLASS;
    a->room = block_array_room(a);
    a->region_base = old->region_base;
    if (packed) {
        uint64_t base = number > PACKED_NUMBER_BEHIND ? number - PACKED_NUMBER_BEHIND : 0;
        a->number_base = old->number_base > base ? old->number_base : base;
    }
    a->log_number = a->number_base;
    for (struct old_blocks o = old_blocks(old, packed); next_old_block(&o, &b);)
        copy_block(t, a, &b);
    r->capacity = (uint32_t)a->capacity;
    r->logged = a->logged;
    __atomic_store_n(&r->array, a, __ATOMIC_SEQ_CST);   /* before the readers are counted (readers.h) */
    t->cursor.key = 0;
    t->replaced++;
    block_pool_give_back(&t->pool, old);
    return a;
}

struct block_array *block_table_rebuild(struct block_table *t, struct block_region *r, uint64_t number,
                                        bool logged)
{
    return rebuild_above(t, r, number, logged, FOR_PUTS);
}

struct block_array *block_table_unlog(struct block_table *t, struct block_region *r)
{
    /* The newest number such that the new base is the old one's. As full
     * as a hashed array may be, not a quarter empty as one rebuilt for
     * puts: a logged array is two thirds full or more, and the look-ups
     * that rebuild it are mostly frees (a heap let go at the end), which
     * would otherwise grow the tables half again as they empty. */
    struct block_array *a = r->array;
    return rebuild_above(t, r, a->number_base + PACKED_NUMBER_BEHIND, false, FOR_LOOKUPS);
}

/* `addr`'s block in t's own arrays removed: its word in *replaced. */
static bool take_here(struct block_table *t, uintptr_t addr, uint64_t *replaced)
{
    struct block_found f;
    if (!block_table_find_here(t, addr, &f))
        return false;
    *replaced = f.block.word;
    block_table_remove(&f);
    return true;
}

enum block_put block_table_put_spilled(struct block_table *t, struct block_region *r, uintptr_t addr,
                                       uint64_t number, uint64_t word, uint64_t *replaced)
{
    /* Numbers moved past the window: a new array with a base of its own. */
    if (r && number - r->array->number_base >= (UINT64_C(1) << PACKED_NUMBER_BITS) &&
        number > r->array->number_base && block_table_rebuild(t, r, number, r->array->logged))
        return block_table_put(t, addr, number, word, replaced);
    spill_mark(t, addr);
    enum block_put result = block_table_put(t->spill, addr, number, word, replaced);
    if (result == BLOCK_PUT_NEW && take_here(t, addr, replaced))   /* its older block packed: gone */
        result = BLOCK_PUT_REPLACED;
    return result;
}

bool block_table_take_spilled(struct block_table *t, uintptr_t addr, uint64_t *replaced)
{
    return take_here(t->spill, addr, replaced);
}

const struct block_directory *block_table_directory(const struct block_table *t)
{
    return __atomic_load_n(&t->directory, __ATOMIC_SEQ_CST);
}

const struct block_array *block_directory_next(const struct block_directory *d, size_t *i)
{
    for (; d && *i < d->capacity; ++*i) {
        const struct block_region *r = &d->regions[*i];
        if (__atomic_load_n(&r->key, __ATOMIC_ACQUIRE)) {
            ++*i;
            return __atomic_load_n(&r->array, __ATOMIC_SEQ_CST);
        }
    }
    return NULL;
}

size_t block_table_bytes(const struct block_table *t)
{
    return (t->directory ? directory_bytes(t->directory->capacity) : 0) + t->pool.bytes +
           (t->spill ? block_table_bytes(t->spill) : 0);
}
