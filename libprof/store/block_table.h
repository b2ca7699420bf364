/* One thread's blocks keyed by address: open addressing with linear probing,
 * written by its owner only and readable at the same time by a report in
 * another thread (store/readers.h). A slot's key is stored last, so a
 * reader that sees it sees the rest. Removal leaves a tombstone unless the
 * next slot is empty (then the run of tombstones before it empties too);
 * tombstones are reused by inserts.
 *
 * Two slot formats. A wide slot (24 bytes) holds a block's address, number
 * and word as they are (struct block_slot). A packed slot (16 bytes) holds
 * the common block, an 8-aligned address below 2^48 whose size fits 28 bits
 * and whose number is within 2^28 of its array's base: the key has the
 * address and the origin's low 16 bits, the value the origin's high 8, the
 * size and the number's distance from the base. A packed table spills the
 * blocks that do not pack into a wide table of its own (`spill`): an
 * address is in one of the two. A table of 1M live blocks takes 18-27 bytes
 * a block packed, 27-41 wide.
 *
 * Growth stops no allocation: when live slots and tombstones are seven
 * eighths of the capacity, a new array, half as large again when live slots
 * are more than three quarters (else as large: the tombstones dropped), is
 * published and the old one becomes the draining array, whose live slots
 * move to the new one a few at each put (BLOCK_DRAIN_STEP) and which is
 * given up when it is empty. A put does not look in the draining array (its
 * moved slots are tombstones: an absent address would probe long runs
 * there); an address found in both, when its older slot moves or its newer
 * one is removed, is a block whose free was not seen: the older (the
 * draining array's) is then dropped (`stale`). A moved slot is copied, and
 * left as it was in the draining array: a reader that took that array as
 * the current one, before the growth, still finds it there, and one that
 * took the pair finds it once or twice, never not at all. A packed array's
 * base follows the numbers: a new array's is 2^27 below the newest number,
 * and a slot whose number is older than that moves to the spill. */
#ifndef MEMPROF_STORE_BLOCK_TABLE_H
#define MEMPROF_STORE_BLOCK_TABLE_H
#include "readers.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BLOCK_EMPTY ((uintptr_t)0)
/* A tombstone keeps its key with the low bit set (block addresses are
 * 8-aligned). An address is in at most one slot, live or not: a lookup or an
 * insert stops at its own tombstone, and the usual case, an address freed
 * and soon handed out again, probes no further. */
#define BLOCK_GONE_BIT ((uintptr_t)1)
#define BLOCK_IS_LIVE(a) ((a) != BLOCK_EMPTY && !((a) & BLOCK_GONE_BIT))

/* A block's word: its size (saturated at 40 bits) and its origin. */
#define BLOCK_SIZE_BITS 40
#define BLOCK_SIZE_MAX ((UINT64_C(1) << BLOCK_SIZE_BITS) - 1)
#define BLOCK_ORIGIN_MAX ((UINT32_C(1) << (64 - BLOCK_SIZE_BITS)) - 1)
#define BLOCK_WORD(size, origin) ((size) | (uint64_t)(origin) << BLOCK_SIZE_BITS)
#define BLOCK_WORD_SIZE(w) ((w) & BLOCK_SIZE_MAX)
#define BLOCK_WORD_ORIGIN(w) ((uint32_t)((w) >> BLOCK_SIZE_BITS))

/* A block as a wide slot holds it; also the young slots' format. */
struct block_slot {
    uintptr_t addr;       /* BLOCK_EMPTY, a key, or a key | BLOCK_GONE_BIT */
    uint64_t number;      /* user-defined (the heap tracer's free counter) */
    uint64_t word;        /* BLOCK_WORD, or user-defined in a wide table */
};

/* The packed slot: key = address | origin << 48 (its low 16 bits); value =
 * origin >> 16 (8 bits) | size << 8 (28 bits) | (number - base) << 36. */
#define PACKED_ADDR_BITS 48
#define PACKED_ADDR_MASK ((UINT64_C(1) << PACKED_ADDR_BITS) - 1)
#define PACKED_ORIGIN_LOW_BITS 16
#define PACKED_ORIGIN_HIGH_BITS 8
#define PACKED_SIZE_BITS 28
#define PACKED_NUMBER_BITS 28
#define PACKED_SIZE_SHIFT PACKED_ORIGIN_HIGH_BITS
#define PACKED_NUMBER_SHIFT (PACKED_ORIGIN_HIGH_BITS + PACKED_SIZE_BITS)
#define PACKED_FIELD(v, shift, bits) (((v) >> (shift)) & ((UINT64_C(1) << (bits)) - 1))
/* a new packed array's base: this far below the newest number */
#define PACKED_NUMBER_BEHIND (UINT64_C(1) << (PACKED_NUMBER_BITS - 1))

#define BLOCK_WIDE_WORDS 3
#define BLOCK_PACKED_WORDS 2

struct block_array {
    size_t capacity;
    uint64_t number_base;     /* packed: a slot's number is this plus its distance */
    uint64_t slots[];         /* capacity slots of 2 (packed) or 3 (wide) words, the key first */
};

/* A block found twice as its slot moves from the draining array: the
 * older slot's (its free was not seen), which is then dropped. */
typedef void block_stale_fn(void *ctx, const struct block_slot *older);

struct block_table {
    struct block_array *array;   /* published; NULL until the first put */
    struct block_array *draining;   /* published: the array before it, being emptied; or NULL */
    struct block_table *spill;   /* set before the first put: packed, the wide table for the rest; NULL: wide */
    block_stale_fn *stale;       /* NULL: a stale slot is dropped without a word */
    void *stale_ctx;
    size_t drain_at;             /* the owner's: draining's slots before it are moved */
    size_t populated;            /* the owner's: bytes of `array` mapped ahead of its writes */
    size_t count;                /* live slots in both (the owner's; the spill's apart) */
    size_t used;                 /* live slots and tombstones of `array` */
    struct retired retired;
};

enum block_put { BLOCK_PUT_NEW, BLOCK_PUT_REPLACED, BLOCK_PUT_NO_MEMORY };

/* Live slots moved from the draining array at each put: the new array,
 * half as large again, is at most 3/4 full when the old one is empty. */
#define BLOCK_DRAIN_STEP 16

/* A new array published, larger when needed, the current one left to drain
 * (one still draining is emptied first); a packed one's base from `number`,
 * the newest. 0, or -1 when out of memory. */
int block_table_rebuild(struct block_table *t, uint64_t number);
/* Up to BLOCK_DRAIN_STEP live slots of the draining array moved. */
void block_table_drain(struct block_table *t);
size_t block_table_bytes(const struct block_table *t);   /* its spill's included */
/* The two arrays as a reader takes them: the draining one (NULL: none) and
 * the current, loaded as a pair that was current together. */
void block_table_arrays(const struct block_table *t, const struct block_array **draining,
                        const struct block_array **array);

static inline bool block_table_packed(const struct block_table *t)
{
    return t->spill != NULL;
}

static inline size_t block_words(bool packed)
{
    return packed ? BLOCK_PACKED_WORDS : BLOCK_WIDE_WORDS;
}

static inline uint64_t block_key_mask(bool packed)
{
    return packed ? PACKED_ADDR_MASK : ~UINT64_C(0);
}

static inline uint64_t *block_array_slot(const struct block_array *a, bool packed, size_t i)
{
    return (uint64_t *)a->slots + i * block_words(packed);
}

/* A block's packed key and value against an array's base; false when it
 * does not pack (wide then). */
static inline bool block_pack(uint64_t base, uintptr_t addr, uint64_t number, uint64_t word, uint64_t *key,
                              uint64_t *value)
{
    uint64_t size = BLOCK_WORD_SIZE(word), origin = BLOCK_WORD_ORIGIN(word), distance = number - base;
    if (((addr & ~PACKED_ADDR_MASK) | (addr & 7) | (size >> PACKED_SIZE_BITS) | (distance >> PACKED_NUMBER_BITS)) != 0)
        return false;
    *key = addr | origin << PACKED_ADDR_BITS;
    *value = origin >> PACKED_ORIGIN_LOW_BITS | size << PACKED_SIZE_SHIFT | distance << PACKED_NUMBER_SHIFT;
    return true;
}

static inline struct block_slot block_unpack(uint64_t base, uint64_t key, uint64_t value)
{
    uint64_t origin = key >> PACKED_ADDR_BITS | PACKED_FIELD(value, 0, PACKED_ORIGIN_HIGH_BITS)
                                                    << PACKED_ORIGIN_LOW_BITS;
    return (struct block_slot){ key & PACKED_ADDR_MASK, base + (value >> PACKED_NUMBER_SHIFT),
                                BLOCK_WORD(PACKED_FIELD(value, PACKED_SIZE_SHIFT, PACKED_SIZE_BITS), origin) };
}

/* The block in slot `s` whose key was read as `key`, the rest read now (a
 * gone slot's address keeps its gone bit, packed or wide). */
static inline struct block_slot block_slot_decode(bool packed, uint64_t base, uint64_t key, const uint64_t *s)
{
    if (!packed)
        return (struct block_slot){ key, __atomic_load_n(&s[1], __ATOMIC_RELAXED),
                                    __atomic_load_n(&s[2], __ATOMIC_RELAXED) };
    struct block_slot b = block_unpack(base, key, __atomic_load_n(&s[1], __ATOMIC_RELAXED));
    b.addr |= key & BLOCK_GONE_BIT;
    return b;
}

/* The block in slot `s` of `a` as a reader takes it: the key first. */
static inline struct block_slot block_array_record(const struct block_array *a, bool packed, const uint64_t *s)
{
    return block_slot_decode(packed, a->number_base, __atomic_load_n(&s[0], __ATOMIC_ACQUIRE), s);
}

static inline size_t block_index(uintptr_t addr, size_t capacity)
{
    uint64_t h = (uint64_t)addr * 0x9E3779B97F4A7C15ull;
    return (size_t)(((unsigned __int128)h * capacity) >> 64);
}

static inline uint64_t *block_array_find(const struct block_array *a, bool packed, uintptr_t addr)
{
    if (!a)
        return NULL;
    uint64_t mask = block_key_mask(packed);
    for (size_t i = block_index(addr, a->capacity);;) {
        uint64_t *s = block_array_slot(a, packed, i);
        uint64_t key = *s & mask;
        if (key == addr)
            return s;
        if (key == BLOCK_EMPTY || key == (addr | BLOCK_GONE_BIT))
            return NULL;
        if (++i == a->capacity)
            i = 0;
    }
}

/* In the draining array, a slot not moved yet: those before drain_at were
 * copied to the current array, and stay as they were for the readers that
 * took the draining array as their current one. */
static inline uint64_t *block_table_find_draining(const struct block_table *t, uintptr_t addr)
{
    bool packed = block_table_packed(t);
    uint64_t *s = block_array_find(t->draining, packed, addr);
    return s && (size_t)(s - t->draining->slots) >= t->drain_at * block_words(packed) ? s : NULL;
}

/* A block found: the table whose slot it is (the table asked, or its
 * spill), the slot, and the block. */
struct block_found {
    struct block_table *table;
    uint64_t *slot;
    struct block_slot block;
};

/* `addr`'s block in this table's own arrays (not its spill's). */
static inline bool block_table_find_here(struct block_table *t, uintptr_t addr, struct block_found *f)
{
    bool packed = block_table_packed(t);
    const struct block_array *a = t->array;
    uint64_t *s = block_array_find(a, packed, addr);
    if (!s && t->draining && (s = block_table_find_draining(t, addr)))
        a = t->draining;
    if (!s)
        return false;
    *f = (struct block_found){ t, s, block_array_record(a, packed, s) };
    return true;
}

static inline bool block_table_find(struct block_table *t, uintptr_t addr, struct block_found *f)
{
    return block_table_find_here(t, addr, f) ||
           (t->spill && t->spill->count && block_table_find_here(t->spill, addr, f));
}

/* Bring the slots where a put of `addr` would look into the cache: its
 * first and the line after (a probe reads several slots at the loads the
 * table keeps). */
static inline void block_array_prefetch(const struct block_array *a, bool packed, uintptr_t addr)
{
    if (a) {
        /* Not __builtin_prefetch: GCC drops it from code it thinks cold. */
        const char *first = (const char *)block_array_slot(a, packed, block_index(addr, a->capacity));
        __asm__ volatile("prefetcht0 %0" : : "m"(*first));
        __asm__ volatile("prefetcht0 %0" : : "m"(first[64]));
    }
}

static inline void block_table_prefetch(const struct block_table *t, uintptr_t addr)
{
    block_array_prefetch(t->array, block_table_packed(t), addr);
}

/* The slot where `addr` is live in `a`; else NULL, and *place the slot a
 * put of it takes: its own tombstone (it is nowhere else), the first
 * tombstone on its way, else the empty slot that ends it (then one more
 * used). */
static inline uint64_t *block_array_place(struct block_table *t, struct block_array *a, bool packed, uintptr_t addr,
                                          uint64_t **place)
{
    uint64_t mask = block_key_mask(packed), *hole = NULL;
    size_t i = block_index(addr, a->capacity);
    for (;;) {
        uint64_t *s = block_array_slot(a, packed, i);
        uint64_t key = *s & mask;
        if (key == addr)
            return s;
        if (key == (addr | BLOCK_GONE_BIT)) {
            hole = s;
            break;
        }
        if (key == BLOCK_EMPTY)
            break;
        if ((key & BLOCK_GONE_BIT) && !hole)
            hole = s;
        if (++i == a->capacity)
            i = 0;
    }
    if (!hole) {
        hole = block_array_slot(a, packed, i);
        t->used++;
    }
    *place = hole;
    return NULL;
}

/* A slot written for a reader in another thread: its key last. */
static inline void block_slot_fill_wide(uint64_t *s, uintptr_t addr, uint64_t number, uint64_t word)
{
    __atomic_store_n(&s[1], number, __ATOMIC_RELAXED);
    __atomic_store_n(&s[2], word, __ATOMIC_RELAXED);
    __atomic_store_n(&s[0], addr, __ATOMIC_RELEASE);
}

static inline void block_slot_fill_packed(uint64_t *s, uint64_t key, uint64_t value)
{
    __atomic_store_n(&s[1], value, __ATOMIC_RELAXED);
    __atomic_store_n(&s[0], key, __ATOMIC_RELEASE);
}

/* A put that does not pack, to the spill (out of line: rare). */
enum block_put block_table_put_spilled(struct block_table *t, uintptr_t addr, uint64_t number, uint64_t word,
                                       uint64_t *replaced);
/* The spill's slot of `addr`, if any, removed: its word in *replaced. */
bool block_table_take_spilled(struct block_table *t, uintptr_t addr, uint64_t *replaced);

/* Add `addr` (8-aligned in a packed table, else even; not 0), or replace
 * its block's number and word (the old word in *replaced). */
static inline enum block_put block_table_put(struct block_table *t, uintptr_t addr, uint64_t number,
                                             uint64_t word, uint64_t *replaced)
{
    if (__builtin_expect(t->draining != NULL, 0))
        block_table_drain(t);
    struct block_array *a = t->array;
    if ((!a || t->used >= a->capacity / 8 * 7) && block_table_rebuild(t, number) != 0)
        return BLOCK_PUT_NO_MEMORY;
    a = t->array;
    bool packed = block_table_packed(t);
    uint64_t key = addr, value = 0, *place;
    if (packed && !block_pack(a->number_base, addr, number, word, &key, &value))
        return block_table_put_spilled(t, addr, number, word, replaced);
    enum block_put result = BLOCK_PUT_NEW;
    if (packed && __builtin_expect(t->spill->count != 0, 0) && block_table_take_spilled(t, addr, replaced))
        result = BLOCK_PUT_REPLACED;   /* its older block spilled: gone */
    uint64_t *s = block_array_place(t, a, packed, addr, &place);
    if (s) {
        if (!packed) {
            *replaced = s[2];
            __atomic_store_n(&s[1], number, __ATOMIC_RELAXED);
            __atomic_store_n(&s[2], word, __ATOMIC_RELAXED);
            return BLOCK_PUT_REPLACED;
        }
        *replaced = block_unpack(a->number_base, *s, s[1]).word;
        /* The key changes too (the origin's low bits): a reader skips the
         * slot while it is rewritten. */
        __atomic_store_n(&s[0], *s | BLOCK_GONE_BIT, __ATOMIC_RELAXED);
        block_slot_fill_packed(s, key, value);
        return BLOCK_PUT_REPLACED;
    }
    if (packed)
        block_slot_fill_packed(place, key, value);
    else
        block_slot_fill_wide(place, addr, number, word);
    t->count++;
    return result;
}

/* An older slot of `addr` still in the draining array dropped as stale. */
void block_table_drop_stale(struct block_table *t, uintptr_t addr);

/* Remove the block in slot `s` of table `t` (as block_table_find gave them). */
static inline void block_table_remove(struct block_table *t, uint64_t *s)
{
    struct block_array *a = t->array;
    bool packed = block_table_packed(t);
    size_t cap = a->capacity, words = block_words(packed);
    t->count--;
    if (s < a->slots || s >= a->slots + cap * words) {
        /* in the draining array, which is given up whole */
        __atomic_store_n(&s[0], s[0] | BLOCK_GONE_BIT, __ATOMIC_RELAXED);
        return;
    }
    /* An older slot of the address still draining would move in as live. */
    if (__builtin_expect(t->draining != NULL, 0))
        block_table_drop_stale(t, s[0] & block_key_mask(packed));
    size_t i = (size_t)(s - a->slots) / words;
    if (*block_array_slot(a, packed, i + 1 == cap ? 0 : i + 1) != BLOCK_EMPTY) {
        __atomic_store_n(&s[0], s[0] | BLOCK_GONE_BIT, __ATOMIC_RELAXED);
        return;
    }
    /* Nothing probes past an empty slot: this one and the tombstones just
     * before it can be empty too. */
    for (;;) {
        __atomic_store_n(block_array_slot(a, packed, i), BLOCK_EMPTY, __ATOMIC_RELAXED);
        t->used--;
        i = i == 0 ? cap - 1 : i - 1;
        if (!(*block_array_slot(a, packed, i) & BLOCK_GONE_BIT))
            return;
    }
}
#endif
