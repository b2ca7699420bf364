/* One thread's blocks keyed by address: open addressing with linear probing,
 * written by its owner only and readable at the same time by a report in
 * another thread (store/readers.h). A slot's address is stored last, so a
 * reader that sees it sees the rest. Removal leaves a tombstone unless the
 * next slot is empty (then the run of tombstones before it empties too);
 * tombstones are reused by inserts.
 *
 * Growth stops no allocation: when live slots and tombstones are seven
 * eighths of the capacity, a new array, half as large again when live slots
 * are more than three quarters (else as large: the tombstones dropped), is
 * published and
 * the old one becomes the draining array, whose live slots move to the new
 * one a few at each put (BLOCK_DRAIN_STEP) and which is given up when it is
 * empty. A put does not look in the draining array (its moved slots are
 * tombstones: an absent address would probe long runs there); an address
 * found in both, when its older slot moves or its newer one is removed, is
 * a block whose free was not seen: the older (the draining array's) is then
 * dropped (`stale`). A moved slot is copied, and left as it was in the
 * draining array: a reader that took that array as the current one, before
 * the growth, still finds it there, and one that took the pair finds it once
 * or twice, never not at all. */
#ifndef MEMPROF_STORE_BLOCK_TABLE_H
#define MEMPROF_STORE_BLOCK_TABLE_H
#include "readers.h"
#include <stddef.h>
#include <stdint.h>

#define BLOCK_EMPTY ((uintptr_t)0)
/* A tombstone keeps its address with the low bit set (keys are even: block
 * addresses are 16-byte aligned). An address is in at most one slot, live
 * or not: a lookup or an insert stops at its own tombstone, and the usual
 * case, an address freed and soon handed out again, probes no further. */
#define BLOCK_GONE_BIT ((uintptr_t)1)
#define BLOCK_IS_LIVE(a) ((a) != BLOCK_EMPTY && !((a) & BLOCK_GONE_BIT))

struct block_slot {
    uintptr_t addr;       /* BLOCK_EMPTY, a key, or a key | BLOCK_GONE_BIT */
    uint64_t number;      /* user-defined (the heap tracer's free counter) */
    uint64_t word;        /* user-defined */
};

struct block_array {
    size_t capacity;
    struct block_slot slots[];
};

/* A block found twice as its slot moves from the draining array: the
 * older slot's (its free was not seen), which is then dropped. */
typedef void block_stale_fn(void *ctx, const struct block_slot *older);

struct block_table {
    struct block_array *array;   /* published; NULL until the first put */
    struct block_array *draining;   /* published: the array before it, being emptied; or NULL */
    block_stale_fn *stale;       /* NULL: a stale slot is dropped without a word */
    void *stale_ctx;
    size_t drain_at;             /* the owner's: draining's slots before it are moved */
    size_t populated;            /* the owner's: bytes of `array` mapped ahead of its writes */
    size_t count;                /* live slots in both (the owner's) */
    size_t used;                 /* live slots and tombstones of `array` */
    struct retired retired;
};

enum block_put { BLOCK_PUT_NEW, BLOCK_PUT_REPLACED, BLOCK_PUT_NO_MEMORY };

/* Live slots moved from the draining array at each put: the new array,
 * half as large again, is at most 3/4 full when the old one is empty. */
#define BLOCK_DRAIN_STEP 16

/* A new array published, larger when needed, the current one left to drain
 * (one still draining is emptied first). 0, or -1 when out of memory. */
int block_table_rebuild(struct block_table *t);
/* Up to BLOCK_DRAIN_STEP live slots of the draining array moved. */
void block_table_drain(struct block_table *t);
size_t block_table_bytes(const struct block_table *t);
/* The two arrays as a reader takes them: the draining one (NULL: none) and
 * the current, loaded as a pair that was current together. */
void block_table_arrays(const struct block_table *t, const struct block_array **draining,
                        const struct block_array **array);

static inline size_t block_index(uintptr_t addr, size_t capacity)
{
    uint64_t h = (uint64_t)addr * 0x9E3779B97F4A7C15ull;
    return (size_t)(((unsigned __int128)h * capacity) >> 64);
}

static inline struct block_slot *block_array_find(struct block_array *a, uintptr_t addr)
{
    if (!a)
        return NULL;
    for (size_t i = block_index(addr, a->capacity);;) {
        struct block_slot *s = &a->slots[i];
        if (s->addr == addr)
            return s;
        if (s->addr == BLOCK_EMPTY || s->addr == (addr | BLOCK_GONE_BIT))
            return NULL;
        if (++i == a->capacity)
            i = 0;
    }
}

/* In the draining array, a slot not moved yet: those before drain_at were
 * copied to the current array, and stay as they were for the readers that
 * took the draining array as their current one. */
static inline struct block_slot *block_table_find_draining(const struct block_table *t, uintptr_t addr)
{
    struct block_slot *s = block_array_find(t->draining, addr);
    return s && (size_t)(s - t->draining->slots) >= t->drain_at ? s : NULL;
}

static inline struct block_slot *block_table_find(const struct block_table *t, uintptr_t addr)
{
    struct block_slot *s = block_array_find(t->array, addr);
    return s || !t->draining ? s : block_table_find_draining(t, addr);
}

/* Bring the slots where a put of `addr` would look into the cache: its
 * first and the line after (a probe reads about four slots at the loads
 * the table keeps). */
static inline void block_array_prefetch(const struct block_array *a, uintptr_t addr)
{
    if (a) {
        /* Not __builtin_prefetch: GCC drops it from code it thinks cold. */
        const char *first = (const char *)&a->slots[block_index(addr, a->capacity)];
        __asm__ volatile("prefetcht0 %0" : : "m"(*first));
        __asm__ volatile("prefetcht0 %0" : : "m"(first[64]));
    }
}

static inline void block_table_prefetch(const struct block_table *t, uintptr_t addr)
{
    block_array_prefetch(t->array, addr);
}

/* The slot where `addr` is live in `a`; else NULL, and *place the slot a
 * put of it takes: its own tombstone (it is nowhere else), the first
 * tombstone on its way, else the empty slot that ends it (then one more
 * used). */
static inline struct block_slot *block_array_place(struct block_table *t, struct block_array *a, uintptr_t addr,
                                                   struct block_slot **place)
{
    struct block_slot *hole = NULL;
    size_t i = block_index(addr, a->capacity);
    for (;;) {
        struct block_slot *s = &a->slots[i];
        if (s->addr == addr)
            return s;
        if (s->addr == (addr | BLOCK_GONE_BIT)) {
            hole = s;
            break;
        }
        if (s->addr == BLOCK_EMPTY)
            break;
        if ((s->addr & BLOCK_GONE_BIT) && !hole)
            hole = s;
        if (++i == a->capacity)
            i = 0;
    }
    if (!hole) {
        hole = &a->slots[i];
        t->used++;
    }
    *place = hole;
    return NULL;
}

/* A slot written for a reader in another thread: its address last. */
static inline void block_slot_fill(struct block_slot *s, uintptr_t addr, uint64_t number, uint64_t word)
{
    __atomic_store_n(&s->number, number, __ATOMIC_RELAXED);
    __atomic_store_n(&s->word, word, __ATOMIC_RELAXED);
    __atomic_store_n(&s->addr, addr, __ATOMIC_RELEASE);
}

/* Add `addr` (even, not 0), or replace its slot's number and word (the old
 * word in *replaced). */
static inline enum block_put block_table_put(struct block_table *t, uintptr_t addr, uint64_t number,
                                             uint64_t word, uint64_t *replaced)
{
    if (__builtin_expect(t->draining != NULL, 0))
        block_table_drain(t);
    struct block_array *a = t->array;
    if ((!a || t->used >= a->capacity / 8 * 7) && block_table_rebuild(t) != 0)
        return BLOCK_PUT_NO_MEMORY;
    a = t->array;
    struct block_slot *place;
    struct block_slot *s = block_array_place(t, a, addr, &place);
    if (s) {
        *replaced = s->word;
        __atomic_store_n(&s->number, number, __ATOMIC_RELAXED);
        __atomic_store_n(&s->word, word, __ATOMIC_RELAXED);
        return BLOCK_PUT_REPLACED;
    }
    block_slot_fill(place, addr, number, word);
    t->count++;
    return BLOCK_PUT_NEW;
}

/* An older slot of `addr` still in the draining array dropped as stale. */
void block_table_drop_stale(struct block_table *t, uintptr_t addr);

static inline void block_table_remove(struct block_table *t, struct block_slot *s)
{
    struct block_array *a = t->array;
    size_t cap = a->capacity;
    t->count--;
    if ((uintptr_t)s < (uintptr_t)a->slots || (uintptr_t)s >= (uintptr_t)(a->slots + cap)) {
        /* in the draining array, which is given up whole */
        __atomic_store_n(&s->addr, s->addr | BLOCK_GONE_BIT, __ATOMIC_RELAXED);
        return;
    }
    /* An older slot of the address still draining would move in as live. */
    if (__builtin_expect(t->draining != NULL, 0))
        block_table_drop_stale(t, s->addr);
    size_t i = (size_t)(s - a->slots);
    if (a->slots[i + 1 == cap ? 0 : i + 1].addr != BLOCK_EMPTY) {
        __atomic_store_n(&s->addr, s->addr | BLOCK_GONE_BIT, __ATOMIC_RELAXED);
        return;
    }
    /* Nothing probes past an empty slot: this one and the tombstones just
     * before it can be empty too. */
    for (;;) {
        __atomic_store_n(&a->slots[i].addr, BLOCK_EMPTY, __ATOMIC_RELAXED);
        t->used--;
        i = i == 0 ? cap - 1 : i - 1;
        if (!(a->slots[i].addr & BLOCK_GONE_BIT))
            return;
    }
}
#endif
