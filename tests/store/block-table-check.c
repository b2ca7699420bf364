/* store/block_table.h against a model: a million random puts, finds and
 * removes (addresses reused, some "freed unseen": put again while an older
 * slot of theirs waits in the draining array), checked after every step
 * against a plain array of what should be live; every growth incremental
 * (no put moves more than BLOCK_DRAIN_STEP slots); and a reader thread
 * that scans the arrays the whole time, as a report does, never missing a
 * block that was live all through its scan. Twice: a wide table, and a
 * packed one with its spill, where some blocks do not pack (an address
 * past 48 bits, a size past 28) and the numbers run past the packed
 * window several times (each new array's base moves, the oldest blocks
 * move to the spill). */
#include "store/block_table.h"
#include "../tap.h"
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ADDRESSES 200000
#define STEPS 1000000
#define PINNED 64          /* addresses the reader checks: live from the start, never touched */

struct run {
    const char *name;
    bool packed;
    uint64_t number_step;    /* numbers go up this much a step */
};

static struct block_table table, spill;
static uint64_t model_word[ADDRESSES];   /* 0: not live */
static bool model_live[ADDRESSES];
static const struct run *run;
static unsigned long stale_seen, stale_wrong;
static volatile bool reading;
static unsigned long scans, misses;

/* In the packed run, one address in 7 is past 48 bits (a custom
 * allocator's key): it spills. */
static uintptr_t address_of(size_t i)
{
    uintptr_t a = 0x100000 + (uintptr_t)i * 16;
    return run->packed && i % 7 == 3 ? a | (uintptr_t)1 << 62 : a;
}

static size_t index_of(uintptr_t a)
{
    return ((a & ~((uintptr_t)1 << 62)) - 0x100000) / 16;
}

/* A word for step `step` of address i: one size in 11 past 28 bits. */
static uint64_t word_of(size_t i, unsigned long step)
{
    uint64_t size = i % 11 == 5 ? (UINT64_C(1) << 30) + step % 1000 : 16 + step % 4096;
    return BLOCK_WORD(size, (step * 7 + i) % BLOCK_ORIGIN_MAX);
}

static void on_stale(void *ctx, const struct block_slot *older)
{
    (void)ctx;
    size_t i = index_of(older->addr);
    stale_seen++;
    /* The older slot's word is never the live one's: the live one was put later. */
    if (i >= ADDRESSES || (model_live[i] && older->word == model_word[i]))
        stale_wrong++;
}

static void scan(const struct block_table *t, bool seen[PINNED])
{
    const struct block_array *draining, *array;
    block_table_arrays(t, &draining, &array);
    const struct block_array *parts[2] = { draining, array };   /* the draining array first */
    bool packed = block_table_packed(t);
    for (int k = 0; k < 2; k++)
        for (size_t s = 0; parts[k] && s < parts[k]->capacity; s++) {
            struct block_slot b = block_array_record(parts[k], packed, block_array_slot(parts[k], packed, s));
            if (BLOCK_IS_LIVE(b.addr) && index_of(b.addr) < PINNED && b.addr == address_of(index_of(b.addr)))
                seen[index_of(b.addr)] = true;
        }
}

static void *reader(void *unused)
{
    (void)unused;
    while (__atomic_load_n(&reading, __ATOMIC_ACQUIRE)) {
        readers_enter();
        bool seen[PINNED] = { false };
        scan(&table, seen);   /* the packed table before its spill: blocks move that way */
        if (table.spill)
            scan(table.spill, seen);
        readers_leave();
        for (int i = 0; i < PINNED; i++)
            misses += !seen[i];
        scans++;
    }
    return NULL;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next_random(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static bool find_word(size_t i, uint64_t *word, struct block_found *f)
{
    if (!block_table_find(&table, address_of(i), f))
        return false;
    *word = f->block.word;
    return f->block.addr == address_of(i);
}

static void check(const struct run *r)
{
    run = r;
    memset(&table, 0, sizeof table);
    memset(&spill, 0, sizeof spill);
    memset(model_word, 0, sizeof model_word);
    memset(model_live, 0, sizeof model_live);
    stale_seen = stale_wrong = scans = misses = 0;
    table.stale = spill.stale = on_stale;
    if (r->packed)
        table.spill = &spill;
    uint64_t replaced;
    for (size_t i = 0; i < PINNED; i++) {
        model_live[i] = true;
        model_word[i] = word_of(i, 0);
        block_table_put(&table, address_of(i), 0, model_word[i], &replaced);
    }
    reading = true;
    pthread_t thread;
    pthread_create(&thread, NULL, reader, NULL);
    size_t live = PINNED, most_live = 0;
    unsigned long wrong = 0, replaced_wrong = 0, unseen_frees = 0, growths = 0;
    const struct block_array *last_array = table.array;
    uint64_t first_base = table.array->number_base, last_base = first_base;
    unsigned long bases = 0;
    double most_bytes = 0;
    for (unsigned long step = 1; step <= STEPS; step++) {
        /* Live blocks grow to about 150,000, fall, and grow again. */
        bool growing = (step / 250000) % 2 == 0;
        size_t i = PINNED + next_random() % (ADDRESSES - PINNED);
        uint64_t word = word_of(i, step), number = step * r->number_step, found_word;
        struct block_found f;
        int op = (int)(next_random() % 100);
        if (!model_live[i] && (growing ? op < 90 : op < 30)) {
            if (block_table_put(&table, address_of(i), number, word, &replaced) != BLOCK_PUT_NEW)
                wrong++;
            model_live[i] = true;
            model_word[i] = word;
            live++;
        } else if (model_live[i] && op < 3) {
            /* Freed unseen, then handed out again: put while the older slot
             * may wait in the draining array (then found stale as it moves). */
            unseen_frees++;
            enum block_put put = block_table_put(&table, address_of(i), number, word, &replaced);
            if (put == BLOCK_PUT_REPLACED && replaced != model_word[i])
                replaced_wrong++;
            model_word[i] = word;
        } else if (model_live[i]) {
            if (!find_word(i, &found_word, &f) || found_word != model_word[i] || f.block.number > number) {
                wrong++;
            } else {
                block_table_remove(f.table, f.slot);
                model_live[i] = false;
                live--;
            }
        } else if (block_table_find(&table, address_of(i), &f)) {
            wrong++;   /* found what is not live */
        }
        if (table.array != last_array) {
            growths++;
            last_array = table.array;
            if (table.array->number_base != last_base) {
                bases++;
                last_base = table.array->number_base;
            }
        }
        if (live > most_live)
            most_live = live;
        /* Bytes a block while the heap first grows, between growths (while one
         * drains both arrays are mapped, a few puts in a hundred). */
        if (r->packed && step < 250000 && !table.draining && table.count > 20000) {
            double bytes = (double)(block_table_bytes(&table) - block_table_bytes(&spill)) / (double)table.count;
            most_bytes = bytes > most_bytes ? bytes : most_bytes;
        }
    }
    __atomic_store_n(&reading, false, __ATOMIC_RELEASE);
    pthread_join(thread, NULL);

    ok(wrong == 0,
       "%s: a million puts, finds and removes agree with the model (%lu disagreements; %zu live at most, %lu growths)",
       r->name, wrong, most_live, growths);
    ok(replaced_wrong == 0, "%s: a put of a live address gives back its word (%lu wrong)", r->name, replaced_wrong);
    ok(stale_seen > 0 && stale_wrong == 0,
       "%s: an address put again while its older slot drained: the older found stale as it moved, never the live "
       "one (%lu stale of %lu unseen frees, %lu wrong)",
       r->name, stale_seen, unseen_frees, stale_wrong);
    size_t found = 0, extra = 0, spilled = 0;
    for (size_t i = 0; i < ADDRESSES; i++) {
        struct block_found f;
        uint64_t word;
        bool here = find_word(i, &word, &f);
        found += model_live[i] && here && word == model_word[i];
        extra += !model_live[i] && here;
        spilled += here && f.table == &spill;
    }
    ok(found == live && extra == 0,
       "%s: at the end every live block is found with its word, no other (%zu of %zu, %zu extra)", r->name, found, live,
       extra);
    /* Stale slots still draining are counted until they move: drain the rest. */
    while (table.draining || spill.draining) {
        if (table.draining)
            block_table_drain(&table);
        if (spill.draining)
            block_table_drain(&spill);
    }
    ok(table.count + spill.count == live, "%s: the tables' counts are the live blocks' (%zu + %zu, model %zu)", r->name,
       table.count, spill.count, live);
    ok(growths >= 5, "%s: the table grew (and was rebuilt) %lu times, each incrementally", r->name, growths);
    ok(scans > 0 && misses == 0,
       "%s: a reader scanning the draining array and then the current one never missed a block live all along "
       "(%lu scans, %lu misses)",
       r->name, scans, misses);
    if (r->packed) {
        /* What does not pack: 1 address in 7, 1 size in 11, and the pinned
         * blocks once their number fell behind the window. */
        ok(spill.count == spilled && (r->number_step > 1 ? spilled > live / 2 : spilled > live / 7 && spilled < live / 3),
           "%s: the blocks that do not pack are in the spill (%zu of %zu)", r->name, spilled, live);
        if (r->number_step > 1)
            ok(bases >= 3 && last_base > first_base,
               "%s: the numbers ran past the packed window and new arrays took new bases (%lu times, last %llu)",
               r->name, bases, (unsigned long long)last_base);
        else
            ok(most_bytes > 16 && most_bytes <= 30,
               "%s: the packed arrays take at most %.1f bytes a block they hold as the heap grows (27.4 with no tombstones; at most 30)",
               r->name, most_bytes);
    }
}

int main(void)
{
    static const struct run runs[] = {
        { "wide", false, 1 },
        /* 1000 a step: 10^9 in all, the 2^28 window passed three times */
        { "packed", true, 1 },
        { "rebased", true, 1000 },
    };
    for (size_t k = 0; k < sizeof runs / sizeof *runs; k++)
        check(&runs[k]);
    return tap_done();
}
