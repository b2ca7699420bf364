#include "block_table.h"
#include "../util/pages.h"
#include <stdbool.h>
#include <sys/mman.h>

/* The new array's pages mapped a slice at each drain step (one call for
 * many pages, where a fault each costs microseconds under a hypervisor):
 * all of them long before the moves end, none all at once. */
#define POPULATE_SLICE (128u << 10)

#define MIN_CAPACITY 1024

static size_t array_bytes(const struct block_table *t, size_t capacity)
{
    return sizeof(struct block_array) + capacity * block_words(block_table_packed(t)) * sizeof(uint64_t);
}

static void drop_older(struct block_table *t, uint64_t *older, const struct block_slot *block)
{
    if (t->stale)
        t->stale(t->stale_ctx, block);
    t->count--;
    __atomic_store_n(&older[0], older[0] | BLOCK_GONE_BIT, __ATOMIC_RELEASE);
}

/* A live slot of the draining array into `a`; dropped, as stale, when a
 * newer slot of its address is there or in the spill. A packed block packs
 * again against the new base, or moves to the spill. */
static void move_slot(struct block_table *t, struct block_array *a, uint64_t *from)
{
    bool packed = block_table_packed(t);
    struct block_slot block = block_array_record(t->draining, packed, from);
    uint64_t key = block.addr, value = 0, *place, replaced;
    bool packs = !packed || block_pack(a->number_base, block.addr, block.number, block.word, &key, &value);
    struct block_found newer;
    /* A newer block of its address, put since the growth: this one's free
     * was not seen. */
    if ((packed && t->spill->count && block_table_find_here(t->spill, block.addr, &newer)) ||
        (packs ? block_array_place(t, a, packed, block.addr, &place) : block_array_find(a, packed, block.addr))) {
        drop_older(t, from, &block);
    } else if (!packs) {
        /* Copied, and left as it was (as any move); counted by the spill
         * now, or, without memory, lost with the array as any put. */
        block_table_put(t->spill, block.addr, block.number, block.word, &replaced);
        t->count--;
    } else if (packed) {
        block_slot_fill_packed(place, key, value);
    } else {
        block_slot_fill_wide(place, block.addr, block.number, block.word);
    }
}

/* Move up to `live` live slots (looking at no more than 4 times as many);
 * the draining array given up once it is all read. */
static void drain(struct block_table *t, size_t live)
{
    struct block_array *old = t->draining, *a = t->array;
    bool packed = block_table_packed(t);
    uint64_t mask = block_key_mask(packed);
    size_t looked = 0;
    for (; t->drain_at < old->capacity && live && looked < 4 * BLOCK_DRAIN_STEP; t->drain_at++, looked++) {
        uint64_t *s = block_array_slot(old, packed, t->drain_at);
        /* The new slot of one a few puts ahead, for its move to find it in the cache. */
        size_t ahead = t->drain_at + 8 * BLOCK_DRAIN_STEP;
        uint64_t ahead_key = ahead < old->capacity ? *block_array_slot(old, packed, ahead) : BLOCK_EMPTY;
        if (BLOCK_IS_LIVE(ahead_key))
            block_array_prefetch(a, packed, ahead_key & mask);
        if (BLOCK_IS_LIVE(*s)) {
            move_slot(t, a, s);
            live--;
        }
    }
    if (t->drain_at == old->capacity) {
        __atomic_store_n(&t->draining, NULL, __ATOMIC_SEQ_CST);
        readers_retire(&t->retired, old, array_bytes(t, old->capacity));
    }
}

void block_table_drop_stale(struct block_table *t, uintptr_t addr)
{
    uint64_t *older = block_table_find_draining(t, addr);
    if (older) {
        struct block_slot block = block_array_record(t->draining, block_table_packed(t), older);
        drop_older(t, older, &block);
    }
}

/* `addr`'s block in t's own arrays removed: its word in *replaced. */
static bool take_here(struct block_table *t, uintptr_t addr, uint64_t *replaced)
{
    struct block_found f;
    if (!block_table_find_here(t, addr, &f))
        return false;
    *replaced = f.block.word;
    block_table_remove(t, f.slot);
    return true;
}

enum block_put block_table_put_spilled(struct block_table *t, uintptr_t addr, uint64_t number, uint64_t word,
                                       uint64_t *replaced)
{
    struct block_array *a = t->array;
    /* Numbers moved past the window: a new array with a base of its own. */
    if (number - a->number_base >= (UINT64_C(1) << PACKED_NUMBER_BITS) && number > a->number_base &&
        !t->draining && block_table_rebuild(t, number) == 0)
        return block_table_put(t, addr, number, word, replaced);
    enum block_put result = block_table_put(t->spill, addr, number, word, replaced);
    if (result == BLOCK_PUT_NEW && take_here(t, addr, replaced))   /* its older block packed: gone */
        result = BLOCK_PUT_REPLACED;
    return result;
}

bool block_table_take_spilled(struct block_table *t, uintptr_t addr, uint64_t *replaced)
{
    return take_here(t->spill, addr, replaced);
}

/* The next slice of the current array's pages mapped (a kernel without
 * MADV_POPULATE_WRITE faults them in as they are written). */
static void populate_ahead(struct block_table *t)
{
    size_t bytes = array_bytes(t, t->array->capacity);
    if (t->populated >= bytes)
        return;
    size_t n = bytes - t->populated < POPULATE_SLICE ? bytes - t->populated : POPULATE_SLICE;
    size_t page = 4096, start = t->populated & ~(page - 1);
#ifdef MADV_POPULATE_WRITE
    madvise((char *)t->array + start, n + (t->populated - start), MADV_POPULATE_WRITE);
#endif
    t->populated += n;
}

void block_table_drain(struct block_table *t)
{
    populate_ahead(t);
    drain(t, BLOCK_DRAIN_STEP);
}

int block_table_rebuild(struct block_table *t, uint64_t number)
{
    while (t->draining)   /* the one before: emptied first (rare: the new array fills slower) */
        drain(t, (size_t)-1);
    struct block_array *old = t->array;
    size_t capacity = old ? old->capacity : MIN_CAPACITY;
    if (old && t->count + 1 > capacity / 4 * 3)
        capacity += capacity / 2;
    /* Its pages mapped a slice a put while the old one drains (populate_ahead). */
    struct block_array *a = pages_alloc_huge(array_bytes(t, capacity));
    if (!a)
        return -1;
    a->capacity = capacity;
    if (block_table_packed(t)) {
        uint64_t base = number > PACKED_NUMBER_BEHIND ? number - PACKED_NUMBER_BEHIND : 0;
        a->number_base = old && old->number_base > base ? old->number_base : base;
    }
    t->used = 0;
    t->drain_at = 0;
    t->populated = 0;
    /* Draining first, then the new array: a reader that loads the pair
     * (block_table_arrays) finds every live slot in one of them. */
    if (old)
        __atomic_store_n(&t->draining, old, __ATOMIC_SEQ_CST);
    __atomic_store_n(&t->array, a, __ATOMIC_SEQ_CST);
    return 0;
}

void block_table_arrays(const struct block_table *t, const struct block_array **draining,
                        const struct block_array **array)
{
    for (;;) {
        const struct block_array *a = __atomic_load_n(&t->array, __ATOMIC_SEQ_CST);
        const struct block_array *d = __atomic_load_n(&t->draining, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&t->array, __ATOMIC_SEQ_CST) == a) {
            *draining = d;
            *array = a;
            return;
        }
    }
}

size_t block_table_bytes(const struct block_table *t)
{
    return (t->array ? array_bytes(t, t->array->capacity) : 0) +
           (t->draining ? array_bytes(t, t->draining->capacity) : 0) + (t->spill ? block_table_bytes(t->spill) : 0);
}
