/* store/block_table.h against a model: a million random puts, finds and
 * removes (addresses reused, some "freed unseen": put again while an older
 * slot of theirs waits in the draining array), checked after every step
 * against a plain array of what should be live; every growth incremental
 * (no put moves more than BLOCK_DRAIN_STEP slots); and a reader thread
 * that scans the pair of arrays the whole time, as a report does, never
 * missing a block that was live all through its scan. */
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

static struct block_table table;
static uint64_t model_word[ADDRESSES];   /* 0: not live */
static bool model_live[ADDRESSES];
static unsigned long stale_seen, stale_wrong;
static volatile bool reading = true;
static unsigned long scans, misses;

static uintptr_t address_of(size_t i)
{
    return 0x100000 + (uintptr_t)i * 16;
}

static void on_stale(void *ctx, const struct block_slot *older)
{
    (void)ctx;
    size_t i = (older->addr - 0x100000) / 16;
    stale_seen++;
    /* The older slot's word is never the live one's: the live one was put later. */
    if (i >= ADDRESSES || (model_live[i] && older->word == model_word[i]))
        stale_wrong++;
}

static void *reader(void *unused)
{
    (void)unused;
    while (__atomic_load_n(&reading, __ATOMIC_ACQUIRE)) {
        readers_enter();
        const struct block_array *draining, *array;
        block_table_arrays(&table, &draining, &array);
        bool seen[PINNED] = { false };
        const struct block_array *parts[2] = { draining, array };   /* the draining array first */
        for (int k = 0; k < 2; k++)
            for (size_t s = 0; parts[k] && s < parts[k]->capacity; s++) {
                uintptr_t a = __atomic_load_n(&parts[k]->slots[s].addr, __ATOMIC_ACQUIRE);
                if (BLOCK_IS_LIVE(a) && a >= address_of(0) && a < address_of(PINNED))
                    seen[(a - address_of(0)) / 16] = true;
            }
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

int main(void)
{
    table.stale = on_stale;
    uint64_t replaced;
    for (size_t i = 0; i < PINNED; i++) {
        model_live[i] = true;
        model_word[i] = 1000 + i;
        block_table_put(&table, address_of(i), 0, model_word[i], &replaced);
    }
    pthread_t thread;
    pthread_create(&thread, NULL, reader, NULL);
    size_t live = PINNED, most_live = 0;
    unsigned long wrong = 0, replaced_wrong = 0, unseen_frees = 0, growths = 0;
    const struct block_array *last_array = table.array;
    for (unsigned long step = 0; step < STEPS; step++) {
        /* Live blocks grow to about 150,000, fall, and grow again. */
        bool growing = (step / 250000) % 2 == 0;
        size_t i = PINNED + next_random() % (ADDRESSES - PINNED);
        uint64_t word = step + 1;
        int op = (int)(next_random() % 100);
        if (!model_live[i] && (growing ? op < 90 : op < 30)) {
            if (block_table_put(&table, address_of(i), step, word, &replaced) != BLOCK_PUT_NEW)
                wrong++;
            model_live[i] = true;
            model_word[i] = word;
            live++;
        } else if (model_live[i] && op < 3) {
            /* Freed unseen, then handed out again: put while the older slot
             * may wait in the draining array (then found stale as it moves). */
            unseen_frees++;
            enum block_put r = block_table_put(&table, address_of(i), step, word, &replaced);
            if (r == BLOCK_PUT_REPLACED && replaced != model_word[i])
                replaced_wrong++;
            model_word[i] = word;
        } else if (model_live[i]) {
            struct block_slot *s = block_table_find(&table, address_of(i));
            if (!s || s->word != model_word[i]) {
                wrong++;
            } else {
                block_table_remove(&table, s);
                model_live[i] = false;
                live--;
            }
        } else if (block_table_find(&table, address_of(i))) {
            wrong++;   /* found what is not live */
        }
        if (table.array != last_array) {
            growths++;
            last_array = table.array;
        }
        if (live > most_live)
            most_live = live;
    }
    __atomic_store_n(&reading, false, __ATOMIC_RELEASE);
    pthread_join(thread, NULL);

    ok(wrong == 0, "a million puts, finds and removes agree with the model (%lu disagreements; %zu live at most, %lu growths)",
       wrong, most_live, growths);
    ok(replaced_wrong == 0, "a put of a live address gives back its word (%lu wrong)", replaced_wrong);
    ok(stale_seen > 0 && stale_wrong == 0,
       "an address put again while its older slot drained: the older found stale as it moved, never the live one "
       "(%lu stale of %lu unseen frees, %lu wrong)",
       stale_seen, unseen_frees, stale_wrong);
    size_t found = 0, extra = 0;
    for (size_t i = 0; i < ADDRESSES; i++) {
        struct block_slot *s = block_table_find(&table, address_of(i));
        found += model_live[i] && s && s->word == model_word[i];
        extra += !model_live[i] && s != NULL;
    }
    ok(found == live && extra == 0, "at the end every live block is found with its word, no other (%zu of %zu, %zu extra)",
       found, live, extra);
    /* Stale slots still draining are counted until they move: drain the rest. */
    while (table.draining)
        block_table_drain(&table);
    ok(table.count == live, "the table's count is the live blocks' (%zu, model %zu)", table.count, live);
    ok(growths >= 5, "the table grew (and was rebuilt) %lu times, each incrementally", growths);
    ok(scans > 0 && misses == 0,
       "a reader scanning the draining array and then the current one never missed a block live all along "
       "(%lu scans, %lu misses)",
       scans, misses);
    return tap_done();
}
