#include "block_table.h"
#include "../util/pages.h"
#include <stdbool.h>
#include <sys/mman.h>

/* The new array's pages mapped a slice at each drain step (one call for
 * many pages, where a fault each costs microseconds under a hypervisor):
 * all of them long before the moves end, none all at once. */
#define POPULATE_SLICE (128u << 10)

#define MIN_CAPACITY 1024

static size_t array_bytes(size_t capacity)
{
    return sizeof(struct block_array) + capacity * sizeof(struct block_slot);
}

/* A live slot of the draining array into `a`; dropped, as stale, when a
 * newer slot of its address is there. */
static void move_slot(struct block_table *t, struct block_array *a, struct block_slot *from)
{
    struct block_slot *place;
    if (block_array_place(t, a, from->addr, &place)) {   /* put since the growth: this one's free was not seen */
        if (t->stale)
            t->stale(t->stale_ctx, from);
        t->count--;
        __atomic_store_n(&from->addr, from->addr | BLOCK_GONE_BIT, __ATOMIC_RELEASE);
        return;
    }
    block_slot_fill(place, from->addr, from->number, from->word);
}

/* Move up to `live` live slots (looking at no more than 4 times as many);
 * the draining array given up once it is all read. */
static void drain(struct block_table *t, size_t live)
{
    struct block_array *old = t->draining, *a = t->array;
    size_t looked = 0;
    for (; t->drain_at < old->capacity && live && looked < 4 * BLOCK_DRAIN_STEP; t->drain_at++, looked++) {
        struct block_slot *s = &old->slots[t->drain_at];
        /* The new slot of one a few puts ahead, for its move to find it in the cache. */
        size_t ahead = t->drain_at + 8 * BLOCK_DRAIN_STEP;
        if (ahead < old->capacity && BLOCK_IS_LIVE(old->slots[ahead].addr))
            block_array_prefetch(a, old->slots[ahead].addr);
        if (BLOCK_IS_LIVE(s->addr)) {
            move_slot(t, a, s);
            live--;
        }
    }
    if (t->drain_at == old->capacity) {
        __atomic_store_n(&t->draining, NULL, __ATOMIC_SEQ_CST);
        readers_retire(&t->retired, old, array_bytes(old->capacity));
    }
}

void block_table_drop_stale(struct block_table *t, uintptr_t addr)
{
    struct block_slot *older = block_table_find_draining(t, addr);
    if (!older)
        return;
    if (t->stale)
        t->stale(t->stale_ctx, older);
    t->count--;
    __atomic_store_n(&older->addr, addr | BLOCK_GONE_BIT, __ATOMIC_RELEASE);
}

/* The next slice of the current array's pages mapped (a kernel without
 * MADV_POPULATE_WRITE faults them in as they are written). */
static void populate_ahead(struct block_table *t)
{
    size_t bytes = array_bytes(t->array->capacity);
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

int block_table_rebuild(struct block_table *t)
{
    while (t->draining)   /* the one before: emptied first (rare: the new array fills slower) */
        drain(t, (size_t)-1);
    struct block_array *old = t->array;
    size_t capacity = old ? old->capacity : MIN_CAPACITY;
    if (old && t->count + 1 > capacity / 4 * 3)
        capacity += capacity / 2;
    /* Its pages mapped a slice a put while the old one drains (populate_ahead). */
    struct block_array *a = pages_alloc(array_bytes(capacity));
    if (!a)
        return -1;
    a->capacity = capacity;
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
    return (t->array ? array_bytes(t->array->capacity) : 0) +
           (t->draining ? array_bytes(t->draining->capacity) : 0);
}
