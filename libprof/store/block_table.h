/* One thread's blocks keyed by address, written by its owner only and
 * readable at the same time by a report in another thread (store/readers.h).
 *
 * The keys are split by region, 64 KiB of addresses each: a directory maps
 * a region to its own small array, an open-addressing table with linear
 * probing. Blocks allocated one after another share a region, so the puts
 * of a growing heap touch one array that stays in the cache, and the table
 * grows a region at a time: an array of a few hundred slots copied at once,
 * never the whole table (a region holds at most 8192 8-aligned blocks).
 * The directory, an entry a region, is copied whole when it grows: rare,
 * and small (a heap of 1 GiB has 16,384 regions).
 * The arrays come from the table's pool (store/block_pool.c) in a few
 * sizes, each half as large again as the one before, and are reused once
 * no report can be reading them.
 *
 * A slot's key is stored last, so a reader that sees it sees the rest.
 * Removal leaves a tombstone unless the next slot is empty (then the run of
 * tombstones before it empties too); tombstones are reused by inserts. An
 * array is replaced when its live slots and tombstones are seven eighths of
 * it: by one half as large again when the live ones are more than three
 * quarters, else by one as large (the tombstones dropped). The new array is
 * written whole and then published in the region's entry; a reader that
 * took the old one finds there every block that was live when it was
 * replaced.
 *
 * Two slot formats. A wide slot (24 bytes) holds a block's address, number
 * and word as they are (struct block_slot). A packed slot (16 bytes) holds
 * the common block, an 8-aligned address below 2^48 whose size fits 28 bits
 * and whose number is within 2^28 of its array's base: the key has the
 * address and the origin's low 16 bits, the value the origin's high 8, the
 * size and the number's distance from the base. A packed table spills the
 * blocks that do not pack into a wide table of its own (`spill`): an
 * address is in one of the two. A new array's base is 2^27 below the
 * newest number (never below the old one's), and a block whose number is
 * older than that moves to the spill.
 *
 * A packed array of BLOCK_LOGGED_CLASS or more starts logged: a log of
 * 8-byte entries, filled in order, with no hashing and no probe, two in
 * each packed slot's room (a block takes one: half a packed slot's memory,
 * which a heap that grows pays for in time too), while a bitmap of the
 * region's 16-byte granules (after the entries) marks those that have a
 * block. A block entry holds the block's place in its region, its origin
 * and its size; its number is the last number entry's before it (the
 * array's base before any), and a number entry is written only when the
 * number changed (a free seen since). A block whose granule is clear is
 * not there; a put of it takes the next entry. The first put whose granule
 * is set, and the owner's first look-up there, rebuild the array hashed (a
 * block freed unseen and made again must replace its older slot, never sit
 * beside it). A heap that grows and never frees its older blocks thus
 * fills arrays in order, each to the full (they have no tombstones: a
 * removal follows a look-up). A reader reads a logged array's entries in
 * order, up to the first empty one (block_log_next); its look-ups at rest
 * ask block_table_may_hold. */
#ifndef MEMPROF_STORE_BLOCK_TABLE_H
#define MEMPROF_STORE_BLOCK_TABLE_H
#include "readers.h"
#include "../arch/cpu.h"
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

/* The keys of a region: those equal above their low 16 bits. */
#define BLOCK_REGION_SHIFT 16

/* A logged array's entries (see the top). A block's: bit 0 set, then its
 * address's 8-byte place in its region, its origin, its size. A number's:
 * bit 0 clear, then the number's distance from the array's base + 1 (never
 * 0: 0 ends the log). */
#define LOG_BLOCK_BIT UINT64_C(1)
#define LOG_PLACE_BITS (BLOCK_REGION_SHIFT - 3)
#define LOG_ORIGIN_BITS 24
#define LOG_SIZE_BITS (64 - 1 - LOG_PLACE_BITS - LOG_ORIGIN_BITS)
#define LOG_ORIGIN_SHIFT (1 + LOG_PLACE_BITS)
#define LOG_SIZE_SHIFT (LOG_ORIGIN_SHIFT + LOG_ORIGIN_BITS)
_Static_assert(LOG_ORIGIN_BITS == 64 - BLOCK_SIZE_BITS, "a log entry holds any origin");
/* A logged array's granules (see the top), and its first size (202 slots:
 * the bitmap, 512 bytes, a sixth of them or less). */
#define BLOCK_GRANULE_SHIFT 4
#define BLOCK_GRANULES (1u << (BLOCK_REGION_SHIFT - BLOCK_GRANULE_SHIFT))
#define BLOCK_LOGGED_CLASS 8

struct block_array {
    size_t capacity;          /* slots; a logged array holds twice as many entries */
    uint64_t number_base;     /* packed: a slot's number is this plus its distance */
    uint64_t region_base;     /* logged: its region's first address (an entry holds the rest) */
    uint64_t log_number;      /* the owner's, logged: the number of the last entry's block, or base */
    int32_t room;             /* the owner's: its slots (seven eighths of them when hashed) less those live
                                 or tombstones (block_array_room); a put replaces it at 0 or less (a
                                 rebuild's copy may fill a hashed one to 0, and the put then takes one more) */
    uint16_t size_class;      /* the owner's: its size in the pool */
    bool logged;              /* a log (see the top), its granules' bitmap after the entries: set before the
                                 array is published, and never changed (a reader reads it too) */
    /* In the pool's free or retired list, the owner's link; handed out, the
     * array's stamp: odd and never the same twice (block_pool.c), so that a
     * reader of a running process that reads it unchanged before and after
     * the array knows the array was not given back meanwhile. */
    union {
        struct block_array *next;
        uint64_t stamp;
    };
    uint64_t slots[];         /* capacity slots of 2 (packed) or 3 (wide) words, the key first; or a log */
};

/* A directory entry. */
struct block_region {
    uint64_t key;                 /* the keys' region + 1 (key >> BLOCK_REGION_SHIFT); 0: empty */
    struct block_array *array;    /* published: set before the key, replaced as the region grows */
    /* The owner's copies of its array's: a look-up finds its first slot
     * with no load of the array's head (one cache miss, not two in turn). */
    uint32_t capacity;
    bool logged;
};

/* Regions by key, open addressing with linear probing; never removed. */
struct block_directory {
    size_t capacity;
    struct block_region regions[];
};

#define BLOCK_POOL_CLASSES 40
#define RECENT_REGIONS 8
/* Regions the owner looked up lately, by key modulo: a heap that grows
 * evicts its young blocks to the last few regions at once (a young slot
 * last held a block 64 KiB before, or 128, or more where blocks start on
 * few of its granules: with 8 regions, 1 eviction in 10 looked further). */
#define NEAR_REGIONS 16

/* A table's arrays (store/block_pool.c). */
struct slab;
struct block_pool {
    struct slab *room[BLOCK_POOL_CLASSES];   /* by size: slabs with an array to hand out */
    struct slab *empty;           /* slabs with none handed out: any size next */
    char *chunk, *chunk_end;      /* slabs not used yet */
    size_t bytes;                 /* slabs in use or kept, arrays mapped alone */
    size_t empty_written;         /* of those, empty slabs kept as they are */
    struct block_array *retired;  /* given back while a report may read them */
    bool packed;                  /* its arrays' slots */
    bool chunk_huge;              /* `chunk` was mapped for huge pages */
};

/* The owner's: the logged array its last append from a region's copies
 * took (block_region_append_logged), whose next entries a heap that grows
 * takes one after another (block_table_append_next: no look-up, no
 * address worked out again). Key 0: none. Cleared when an array is
 * replaced (it may be this one) or a block spilled (one of its region's
 * may be an older block at the address appended). */
struct block_cursor {
    uint64_t key;               /* its region's */
    struct block_array *array;
    uint64_t *granules;         /* its bitmap */
    uint64_t *entries_end;      /* past its last entry: the next one is `room` entries before */
};

struct block_table {
    struct block_directory *directory;   /* published; NULL until the first put */
    struct block_cursor cursor;
    uint64_t spill_regions;      /* the owner's: a bit per 64th of the regions, set when a block of one
                                    of them is spilled (block_spill_may_hold); reset by a spill that
                                    finds the spill empty */
    struct block_table *spill;   /* set before the first put: packed, the wide table for the rest; NULL: wide */
    struct block_region *near[NEAR_REGIONS];   /* the owner's: regions last looked up, in `directory`, or NULL */
    uint64_t recent[RECENT_REGIONS];   /* the owner's: the keys of the regions added last, by count */
    unsigned start_class;        /* the owner's: a new region's array size (block_table_add_region) */
    size_t regions;              /* the owner's: entries in `directory` */
    size_t count;                /* the owner's: live slots (the spill's apart) */
    size_t replaced;             /* the owner's: arrays replaced by larger or cleaner ones */
    bool logged_lately;          /* the owner's: its last put took a logged array's next slot */
    size_t lookups_failed;       /* the owner's: look-ups with no memory to rebuild a logged array hashed
                                    (a block there was not found) */
    struct block_pool pool;
    struct retired retired;      /* directories replaced by larger ones */
};

enum block_put { BLOCK_PUT_NEW, BLOCK_PUT_REPLACED, BLOCK_PUT_NO_MEMORY };

/* A region's array handed out (zeroed, its capacity and class set: the
 * table sets the rest) or given back; NULL when out of memory. */
struct block_array *block_pool_take(struct block_pool *p, unsigned size_class, bool packed);
void block_pool_give_back(struct block_pool *p, struct block_array *a);
size_t block_pool_capacity(unsigned size_class);

/* The region of `key` added (with an empty array), or NULL when out of
 * memory; near then. */
struct block_region *block_table_add_region(struct block_table *t, uint64_t key);
/* The region of `key` if the table has one (near then), else NULL. */
struct block_region *block_table_find_region(struct block_table *t, uint64_t key);
/* The region's array replaced by one as large, or half as large again
 * when it is more than three quarters live, whose base is from `number`
 * (the newest), logged if `logged` and the old one was (see the top); the
 * new one, or NULL when out of memory. */
struct block_array *block_table_rebuild(struct block_table *t, struct block_region *r, uint64_t number,
                                        bool logged);
/* A logged array rebuilt hashed, its base kept; NULL when out of memory. */
struct block_array *block_table_unlog(struct block_table *t, struct block_region *r);
size_t block_table_bytes(const struct block_table *t);   /* its spill's included */

/* The directory as a reader takes it (NULL: empty), and the next of its
 * regions' arrays from *i on (each loaded once: the array of a region
 * replaced later stays mapped until the reader leaves), NULL at the end. */
const struct block_directory *block_table_directory(const struct block_table *t);
const struct block_array *block_directory_next(const struct block_directory *d, size_t *i);

static inline bool block_table_packed(const struct block_table *t)
{
    return t->spill != NULL;
}

/* The bit of spill_regions of the region of `addr`. */
static inline uint64_t block_spill_bit(uintptr_t addr)
{
    return UINT64_C(1) << ((((uint64_t)addr >> BLOCK_REGION_SHIFT) * UINT64_C(0x9E3779B97F4A7C15)) >> 58);
}

/* Whether a packed table's spill may hold a block at `addr`: it holds
 * blocks, one of them of a region whose bit is addr's. Every thread but the
 * first spills its stack (a custom block, its address tagged past 48 bits):
 * a test of the spill's count alone sent every put to the spill's look-up. */
static inline bool block_spill_may_hold(const struct block_table *t, uintptr_t addr)
{
    return t->spill->count != 0 && (t->spill_regions & block_spill_bit(addr)) != 0;
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

/* A logged array's entries, two in each slot's room. */
static inline size_t block_log_entries(size_t capacity)
{
    return capacity * BLOCK_PACKED_WORDS;
}

/* An empty array's room: an array is replaced when its live slots and
 * tombstones fill it, or seven eighths of it when hashed (probes stay
 * short); a logged one when its entries do. */
static inline int32_t block_array_room(const struct block_array *a)
{
    return (int32_t)(a->logged ? block_log_entries(a->capacity) : a->capacity / 8 * 7);
}

/* Its live slots and tombstones; a logged one's entries. */
static inline size_t block_array_used(const struct block_array *a)
{
    return (size_t)(block_array_room(a) - a->room);
}

/* The word and bit of `bitmap` (a logged array's) for the granule of `addr`. */
static inline uint64_t *block_granule_in(uint64_t *bitmap, uintptr_t addr, uint64_t *bit)
{
    unsigned g = ((unsigned)addr >> BLOCK_GRANULE_SHIFT) & (BLOCK_GRANULES - 1);
    *bit = UINT64_C(1) << (g % 64);
    return &bitmap[g / 64];
}

/* The granule of `addr` marked in `bitmap`: false, and nothing done, when
 * it was (an address has one slot: the put goes the long way). */
static inline bool block_granule_claim(uint64_t *bitmap, uintptr_t addr)
{
    uint64_t bit, *granule = block_granule_in(bitmap, addr, &bit), taken = *granule;
    if (taken & bit)
        return false;
    *granule = taken | bit;
    return true;
}

/* A logged array's bitmap word and bit for the granule of `addr`; `capacity`: a->capacity. */
static inline uint64_t *block_array_granule_at(const struct block_array *a, size_t capacity, uintptr_t addr,
                                               uint64_t *bit)
{
    return block_granule_in((uint64_t *)block_array_slot(a, true, capacity), addr, bit);
}

static inline uint64_t *block_array_granule(const struct block_array *a, uintptr_t addr, uint64_t *bit)
{
    return block_array_granule_at(a, a->capacity, addr, bit);
}

static inline uint64_t block_region_key(uintptr_t addr)
{
    return ((uint64_t)addr >> BLOCK_REGION_SHIFT) + 1;
}

/* `addr`'s region if the owner looked it up lately, else NULL (no call). */
static inline struct block_region *block_table_near_region(const struct block_table *t, uintptr_t addr)
{
    uint64_t key = block_region_key(addr);
    struct block_region *r = t->near[key % NEAR_REGIONS];
    return r && r->key == key ? r : NULL;
}

/* `addr`'s region, for the owner: one looked up lately, or found; NULL
 * when the table has none. */
static inline struct block_region *block_table_region(struct block_table *t, uintptr_t addr)
{
    struct block_region *r = block_table_near_region(t, addr);
    return r ? r : block_table_find_region(t, block_region_key(addr));
}

/* Whether a block fits a packed slot, or a log entry (`size_bits` the
 * one's or the other's): an 8-aligned address below 2^48, a size below
 * 2^size_bits, a number within 2^28 of the array's base (`distance`). One
 * test, as the fields are ORed. */
static inline bool block_fits(uintptr_t addr, uint64_t size, uint64_t distance, unsigned size_bits)
{
    return ((addr & ~PACKED_ADDR_MASK) | (addr & 7) | (size >> size_bits) | (distance >> PACKED_NUMBER_BITS)) == 0;
}

/* Whether a block's address and size pack (its number may still not). */
static inline bool block_packs(uintptr_t addr, uint64_t word)
{
    return block_fits(addr, BLOCK_WORD_SIZE(word), 0, PACKED_SIZE_BITS);
}

/* A block's packed key and value against an array's base; false when it
 * does not pack (wide then). */
static inline bool block_pack(uint64_t base, uintptr_t addr, uint64_t number, uint64_t word, uint64_t *key,
                              uint64_t *value)
{
    uint64_t size = BLOCK_WORD_SIZE(word), origin = BLOCK_WORD_ORIGIN(word), distance = number - base;
    if (!block_fits(addr, size, distance, PACKED_SIZE_BITS))
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

/* `addr`'s live slot in `a`, else NULL; `capacity`: a->capacity (the
 * owner's look-ups take it from the region's copy). */
static inline uint64_t *block_array_find_at(const struct block_array *a, size_t capacity, bool packed,
                                            uintptr_t addr)
{
    uint64_t mask = block_key_mask(packed);
    for (size_t i = block_index(addr, capacity);;) {
        uint64_t *s = block_array_slot(a, packed, i);
        uint64_t key = *s & mask;
        if (key == addr)
            return s;
        if (key == BLOCK_EMPTY || key == (addr | BLOCK_GONE_BIT))
            return NULL;
        if (++i == capacity)
            i = 0;
    }
}

/* A block found: the table whose slot it is (the table asked, or its
 * spill), the array and the slot, and the block. */
struct block_found {
    struct block_table *table;
    struct block_array *array;
    uint64_t *slot;
    struct block_slot block;
};

/* Whether a logged array's granule of `addr` has a slot. */
static inline bool block_array_granule_taken(const struct block_array *a, uintptr_t addr)
{
    uint64_t bit;
    return (*block_array_granule(a, addr, &bit) & bit) != 0;
}

/* The same for the owner, from its region's copies. */
static inline bool block_region_granule_taken(const struct block_region *r, uintptr_t addr)
{
    uint64_t bit;
    return (*block_array_granule_at(r->array, r->capacity, addr, &bit) & bit) != 0;
}

/* `addr`'s block in this table's own arrays (not its spill's), for the
 * owner: a logged array that may have it is rebuilt hashed first. */
static inline bool block_table_find_here(struct block_table *t, uintptr_t addr, struct block_found *f)
{
    struct block_region *r = block_table_region(t, addr);
    if (!r)
        return false;
    bool packed = block_table_packed(t);
    if (r->logged) {
        if (!block_region_granule_taken(r, addr))
            return false;   /* not there */
        if (!block_table_unlog(t, r)) {
            t->lookups_failed++;
            return false;   /* no memory to look */
        }
    }
    uint64_t *s = block_array_find_at(r->array, r->capacity, packed, addr);
    if (!s)
        return false;
    *f = (struct block_found){ t, r->array, s, block_array_record(r->array, packed, s) };
    return true;
}

/* Whether this table's own arrays may hold `addr`, for a reader at rest
 * (its owner gone, or this thread): a logged array's granule taken counts. */
static inline bool block_table_may_hold(struct block_table *t, uintptr_t addr)
{
    struct block_region *r = block_table_region(t, addr);
    if (!r)
        return false;
    if (r->logged)
        return block_region_granule_taken(r, addr);
    return block_array_find_at(r->array, r->capacity, block_table_packed(t), addr) != NULL;
}

static inline bool block_table_find(struct block_table *t, uintptr_t addr, struct block_found *f)
{
    return block_table_find_here(t, addr, f) ||
           (t->spill && block_spill_may_hold(t, addr) && block_table_find_here(t->spill, addr, f));
}

/* Bring the slots where a put of `addr` would look into the cache: its
 * first and the line after (a probe reads several slots at the loads the
 * table keeps). A region not there yet has nothing to fetch. For a packed
 * table (the owner's blocks: its format known when compiled). */
static inline void block_table_prefetch_packed(struct block_table *t, uintptr_t addr)
{
    struct block_region *r = block_table_region(t, addr);
    if (r && !r->logged) {   /* a logged one's next slot follows the last */
        const bool packed = true;
        const char *first = (const char *)block_array_slot(r->array, packed, block_index(addr, r->capacity));
        cpu_prefetch(first);
        cpu_prefetch(first + 64);
    }
}

/* The slot where `addr` is live in `a`; else NULL, and *place the slot a
 * put of it takes: its own tombstone (it is nowhere else), the first
 * tombstone on its way, else the empty slot that ends it (then one more
 * used). */
static inline uint64_t *block_array_place(struct block_array *a, bool packed, uintptr_t addr, uint64_t **place)
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
        a->room--;
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

/* Whether a logged array has room for a block of `number`: one entry, and
 * one more when the number changed. */
static inline bool block_log_has_room(const struct block_array *a, uint64_t number)
{
    return a->room >= 1 + (number != a->log_number);
}

/* Whether a block that packs takes a log entry too (its size fits). */
static inline bool block_log_takes(uint64_t word)
{
    return (BLOCK_WORD_SIZE(word) >> LOG_SIZE_BITS) == 0;
}

/* Whether a block packs against `a`'s base and takes a log entry. */
static inline bool block_log_fits(const struct block_array *a, uintptr_t addr, uint64_t number, uint64_t word)
{
    return block_fits(addr, BLOCK_WORD_SIZE(word), number - a->number_base, LOG_SIZE_BITS);
}

/* A block's log entry (it packs and block_log_takes). */
static inline uint64_t block_log_entry(uintptr_t addr, uint64_t word)
{
    return LOG_BLOCK_BIT | ((uint64_t)addr & ((UINT64_C(1) << BLOCK_REGION_SHIFT) - 1)) >> 3 << 1 |
           (uint64_t)BLOCK_WORD_ORIGIN(word) << LOG_ORIGIN_SHIFT | BLOCK_WORD_SIZE(word) << LOG_SIZE_SHIFT;
}

/* A block (it packs and block_log_takes) written to a logged array's next
 * entries (block_log_has_room); its granule not marked. `capacity`:
 * a->capacity. Each entry whole for a reader in another thread, in order. */
static inline void block_log_write(struct block_array *a, size_t capacity, uintptr_t addr, uint64_t number,
                                   uint64_t word)
{
    uint64_t *entries = (uint64_t *)a->slots;
    size_t next = block_log_entries(capacity) - (size_t)a->room;
    if (__builtin_expect(number != a->log_number, 0)) {
        __atomic_store_n(&entries[next++], (number - a->number_base + 1) << 1, __ATOMIC_RELEASE);
        a->log_number = number;
        a->room--;
    }
    __atomic_store_n(&entries[next], block_log_entry(addr, word), __ATOMIC_RELEASE);
    a->room--;
}

/* The same, its granule (which has no block) marked. */
static inline void block_log_append(struct block_array *a, uintptr_t addr, uint64_t number, uint64_t word)
{
    uint64_t bit;
    *block_array_granule(a, addr, &bit) |= bit;
    block_log_write(a, a->capacity, addr, number, word);
}

/* A logged array's next block from entry *i on, its number from the
 * entries before it (*number: the base before the first); false at the
 * log's end (its first empty entry, or `entries`). `a` as a reader takes
 * it: an entry whole, each before the ones after it. */
static inline bool block_log_next(const struct block_array *a, size_t entries, size_t *i, uint64_t *number,
                                  struct block_slot *b)
{
    const uint64_t *log = (const uint64_t *)a->slots;
    while (*i < entries) {
        uint64_t entry = __atomic_load_n(&log[*i], __ATOMIC_ACQUIRE);
        if (entry == 0)
            return false;
        ++*i;
        if (!(entry & LOG_BLOCK_BIT)) {
            *number = a->number_base + (entry >> 1) - 1;
            continue;
        }
        uint64_t place = (entry >> 1) & ((UINT64_C(1) << LOG_PLACE_BITS) - 1);
        uint64_t origin = (entry >> LOG_ORIGIN_SHIFT) & ((UINT64_C(1) << LOG_ORIGIN_BITS) - 1);
        *b = (struct block_slot){ a->region_base + place * 8, *number, BLOCK_WORD(entry >> LOG_SIZE_SHIFT, origin) };
        return true;
    }
    return false;
}

/* The put of a block whose region `r` (block_table_near_region's or
 * block_table_find_region's) has a logged array with room, where
 * its granule has no slot: that array's next slot taken; else nothing
 * (false), and the caller puts it the long way. No rebuild, no region
 * added, no spill: the short case of block_table_put_packed, for a caller
 * that keeps the block elsewhere when it is not. */
static inline bool block_region_append_logged(struct block_table *t, const struct block_region *r, uintptr_t addr,
                                              uint64_t number, uint64_t word)
{
    /* From the region's copies of the array's capacity and kind, its
     * granule's word read once: a heap that grows comes here for each
     * region's first block (record_direct), and the cursor takes the rest. */
    struct block_array *a = r->array;
    if (!r->logged || !block_log_has_room(a, number) || block_spill_may_hold(t, addr) ||
        !block_log_fits(a, addr, number, word))
        return false;
    uint64_t *bitmap = (uint64_t *)block_array_slot(a, true, r->capacity);
    if (!block_granule_claim(bitmap, addr))
        return false;
    block_log_write(a, r->capacity, addr, number, word);
    t->count++;
    if (__builtin_expect(t->cursor.key != r->key, 0))
        t->cursor = (struct block_cursor){ r->key, a, bitmap, (uint64_t *)a->slots + block_log_entries(r->capacity) };
    return true;
}

/* The same for a block in the cursor's region, at the number of its last
 * entry: the next entry, from the cursor's addresses (the number's fit
 * was tested when it was logged); else false, and nothing done. */
static inline bool block_table_append_next(struct block_table *t, uintptr_t addr, uint64_t number, uint64_t word)
{
    const struct block_cursor *c = &t->cursor;
    if (block_region_key(addr) != c->key)
        return false;
    struct block_array *a = c->array;
    int32_t room = a->room;
    if (number != a->log_number || room < 1 || !block_fits(addr, BLOCK_WORD_SIZE(word), 0, LOG_SIZE_BITS))
        return false;
    if (!block_granule_claim(c->granules, addr))
        return false;
    __atomic_store_n(c->entries_end - room, block_log_entry(addr, word), __ATOMIC_RELEASE);
    a->room = room - 1;
    t->count++;
    return true;
}

/* A put that does not pack, to the spill (out of line: rare); `r` its
 * region when only its number did not. */
enum block_put block_table_put_spilled(struct block_table *t, struct block_region *r, uintptr_t addr,
                                       uint64_t number, uint64_t word, uint64_t *replaced);
/* The spill's slot of `addr`, if any, removed: its word in *replaced. */
bool block_table_take_spilled(struct block_table *t, uintptr_t addr, uint64_t *replaced);

/* Add `addr` (8-aligned in a packed table, else even; not 0), or replace
 * its block's number and word (the old word in *replaced). `packed`:
 * block_table_packed(t), a constant where the caller knows it. */
static inline __attribute__((always_inline)) enum block_put
block_table_put_as(struct block_table *t, bool packed, uintptr_t addr, uint64_t number, uint64_t word,
                   uint64_t *replaced)
{
    if (packed && __builtin_expect(!block_packs(addr, word), 0))
        return block_table_put_spilled(t, NULL, addr, number, word, replaced);
    struct block_region *r = block_table_region(t, addr);
    if (!r && !(r = block_table_add_region(t, block_region_key(addr))))
        return BLOCK_PUT_NO_MEMORY;
    struct block_array *a = r->array;
    if ((a->logged ? !block_log_has_room(a, number) : a->room <= 0) &&
        !(a = block_table_rebuild(t, r, number, a->logged)))
        return BLOCK_PUT_NO_MEMORY;
    uint64_t key = addr, value = 0, *place;
    if (packed && !block_pack(a->number_base, addr, number, word, &key, &value))
        return block_table_put_spilled(t, r, addr, number, word, replaced);
    enum block_put result = BLOCK_PUT_NEW;
    if (packed && __builtin_expect(block_spill_may_hold(t, addr), 0) && block_table_take_spilled(t, addr, replaced))
        result = BLOCK_PUT_REPLACED;   /* its older block spilled: gone */
    if (packed && a->logged) {
        if (block_log_takes(word) && !block_array_granule_taken(a, addr)) {   /* not there: the next entry */
            block_log_append(a, addr, number, word);
            t->count++;
            t->logged_lately = true;
            return result;
        }
        if (!(a = block_table_unlog(t, r)))   /* its base kept: key and value stand */
            return BLOCK_PUT_NO_MEMORY;
    }
    t->logged_lately = false;
    uint64_t *s = block_array_place(a, packed, addr, &place);
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

static inline enum block_put block_table_put(struct block_table *t, uintptr_t addr, uint64_t number,
                                             uint64_t word, uint64_t *replaced)
{
    return block_table_put_as(t, block_table_packed(t), addr, number, word, replaced);
}

/* The same for a table known to be packed (its spill set). */
static inline enum block_put block_table_put_packed(struct block_table *t, uintptr_t addr, uint64_t number,
                                                    uint64_t word, uint64_t *replaced)
{
    return block_table_put_as(t, true, addr, number, word, replaced);
}

/* Remove the block found (block_table_find). */
static inline void block_table_remove(const struct block_found *f)
{
    struct block_array *a = f->array;
    bool packed = block_table_packed(f->table);
    size_t cap = a->capacity, words = block_words(packed), i = (size_t)(f->slot - a->slots) / words;
    f->table->count--;   /* never logged: the look-up before rebuilt it hashed */
    if (*block_array_slot(a, packed, i + 1 == cap ? 0 : i + 1) != BLOCK_EMPTY) {
        __atomic_store_n(&f->slot[0], f->slot[0] | BLOCK_GONE_BIT, __ATOMIC_RELAXED);
        return;
    }
    /* Nothing probes past an empty slot: this one and the tombstones just
     * before it can be empty too. */
    for (;;) {
        __atomic_store_n(block_array_slot(a, packed, i), BLOCK_EMPTY, __ATOMIC_RELAXED);
        a->room++;
        i = i == 0 ? cap - 1 : i - 1;
        if (!(*block_array_slot(a, packed, i) & BLOCK_GONE_BIT))
            return;
    }
}
#endif
