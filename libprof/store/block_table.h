/* One thread's blocks keyed by address: open addressing with linear probing,
 * written by its owner only and readable at the same time by a report in
 * another thread (store/readers.h: a growth publishes a copy). A slot's
 * address is stored last, so a reader that sees it sees the rest. Removal
 * leaves a tombstone unless the next slot is empty (then the run of
 * tombstones before it empties too); tombstones are reused by inserts and
 * dropped at the next rebuild, when seven eighths of the slots are used;
 * capacity grows by half when live slots are three quarters of it. So live
 * slots fill at least half of a grown table: 24 bytes each make at most 48
 * bytes per live entry. */
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

struct block_table {
    struct block_array *array;   /* published; NULL until the first put */
    size_t count;                /* live slots (the owner's) */
    size_t used;                 /* live slots and tombstones */
    struct retired retired;
};

enum block_put { BLOCK_PUT_NEW, BLOCK_PUT_REPLACED, BLOCK_PUT_NO_MEMORY };

/* Rebuild, larger when needed. 0, or -1 when out of memory. */
int block_table_rebuild(struct block_table *t);
size_t block_table_bytes(const struct block_table *t);

static inline size_t block_index(uintptr_t addr, size_t capacity)
{
    uint64_t h = (uint64_t)addr * 0x9E3779B97F4A7C15ull;
    return (size_t)(((unsigned __int128)h * capacity) >> 64);
}

static inline struct block_slot *block_table_find(const struct block_table *t, uintptr_t addr)
{
    struct block_array *a = t->array;
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

/* Bring the slots where a put of `addr` would look into the cache: its
 * first and the line after (a probe reads about four slots at the loads
 * the table keeps). */
static inline void block_table_prefetch(const struct block_table *t, uintptr_t addr)
{
    const struct block_array *a = t->array;
    if (a) {
        /* Not __builtin_prefetch: GCC drops it from code it thinks cold. */
        const char *first = (const char *)&a->slots[block_index(addr, a->capacity)];
        __asm__ volatile("prefetcht0 %0" : : "m"(*first));
        __asm__ volatile("prefetcht0 %0" : : "m"(first[64]));
    }
}

/* Add `addr` (even, not 0), or replace its slot's number and word (the old
 * word in *replaced). */
static inline enum block_put block_table_put(struct block_table *t, uintptr_t addr, uint64_t number,
                                             uint64_t word, uint64_t *replaced)
{
    struct block_array *a = t->array;
    if ((!a || t->used >= a->capacity / 8 * 7) && block_table_rebuild(t) != 0)
        return BLOCK_PUT_NO_MEMORY;
    a = t->array;
    struct block_slot *hole = NULL;
    size_t i = block_index(addr, a->capacity);
    for (;;) {
        struct block_slot *s = &a->slots[i];
        if (s->addr == addr) {
            *replaced = s->word;
            __atomic_store_n(&s->number, number, __ATOMIC_RELAXED);
            __atomic_store_n(&s->word, word, __ATOMIC_RELAXED);
            return BLOCK_PUT_REPLACED;
        }
        if (s->addr == (addr | BLOCK_GONE_BIT)) {
            hole = s;   /* its own tombstone: it is nowhere else */
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
    __atomic_store_n(&hole->number, number, __ATOMIC_RELAXED);
    __atomic_store_n(&hole->word, word, __ATOMIC_RELAXED);
    __atomic_store_n(&hole->addr, addr, __ATOMIC_RELEASE);
    t->count++;
    return BLOCK_PUT_NEW;
}

static inline void block_table_remove(struct block_table *t, struct block_slot *s)
{
    struct block_array *a = t->array;
    size_t i = (size_t)(s - a->slots), cap = a->capacity;
    t->count--;
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
