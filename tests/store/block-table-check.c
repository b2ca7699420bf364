/* store/block_table.h against a model: a million random puts, finds and
 * removes (addresses reused, some "freed unseen": put again while live),
 * checked after every step against a plain array of what should be live;
 * every growth one region's array (no put copies more than the slots of a
 * region); and a reader thread that scans the regions the whole time, as a
 * report does, never missing a block that was live all through its scan.
 * Six times: a wide table; a packed one with its spill, where some blocks
 * do not pack (an address past 48 bits, a size past 28); one whose numbers
 * run past the packed window several times (a region's new array takes a
 * new base, its oldest blocks move to the spill); the last two again with
 * regions that start logged (filled in order until a look-up), their new
 * blocks put as the heap hooks' direct mode puts them; and a logged one
 * whose blocks all pack (its spill stays empty). Then heaps that grow in
 * order, the log appended to last given up, logs read while written, and
 * the pool's pages. */
#include "store/block_table.h"
#include "store/readers.h"
#include "../tap.h"
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define ADDRESSES 200000
#define STEPS 1000000
#define FIRST_GROWTH 250000
#define PINNED 64          /* addresses the reader checks: live from the start, never touched */

struct run {
    const char *name;
    bool packed;
    uint64_t number_step;    /* numbers go up this much a step */
    unsigned start_class;    /* the regions' first size: from BLOCK_LOGGED_CLASS on, logged */
    bool all_pack;           /* packed, but no address or size that does not pack: the spill stays empty */
};

static struct block_table table, spill;
static uint64_t model_word[ADDRESSES];   /* 0: not live */
static bool model_live[ADDRESSES];
static const struct run *run;
static volatile bool reading;
static unsigned long scans, misses, logged_read;

/* In the packed run, one address in 7 is past 48 bits (a custom
 * allocator's key): it spills. */
static uintptr_t address_of(size_t i)
{
    uintptr_t a = 0x100000 + (uintptr_t)i * 16;
    return run->packed && !run->all_pack && i % 7 == 3 ? a | (uintptr_t)1 << 62 : a;
}

static size_t index_of(uintptr_t a)
{
    return ((a & ~((uintptr_t)1 << 62)) - 0x100000) / 16;
}

/* A word for step `step` of address i: one size in 11 past 28 bits. */
static uint64_t word_of(size_t i, unsigned long step)
{
    uint64_t size = i % 11 == 5 && !run->all_pack ? (UINT64_C(1) << 30) + step % 1000 : 16 + step % 4096;
    return BLOCK_WORD(size, (step * 7 + i) % BLOCK_ORIGIN_MAX);
}

static void scan(const struct block_table *t, bool seen[PINNED])
{
    const struct block_directory *d = block_table_directory(t);
    const struct block_array *a;
    bool packed = block_table_packed(t);
    for (size_t i = 0; (a = block_directory_next(d, &i));) {
        if (packed && a->logged) {   /* its entries in order, as a report reads them */
            struct block_slot b;
            uint64_t number = a->number_base;
            for (size_t e = 0; block_log_next(a, block_log_entries(a->capacity), &e, &number, &b);) {
                logged_read++;
                if (index_of(b.addr) < PINNED && b.addr == address_of(index_of(b.addr)))
                    seen[index_of(b.addr)] = true;
            }
            continue;
        }
        for (size_t s = 0; s < a->capacity; s++) {
            struct block_slot b = block_array_record(a, packed, block_array_slot(a, packed, s));
            if (BLOCK_IS_LIVE(b.addr) && index_of(b.addr) < PINNED && b.addr == address_of(index_of(b.addr)))
                seen[index_of(b.addr)] = true;
        }
    }
}

/* Over a table's arrays: the most slots one has, and the highest base. */
static void arrays_of(const struct block_table *t, size_t *most_slots, uint64_t *highest_base)
{
    const struct block_directory *d = block_table_directory(t);
    const struct block_array *a;
    *most_slots = 0;
    *highest_base = 0;
    for (size_t i = 0; (a = block_directory_next(d, &i));) {
        *most_slots = a->capacity > *most_slots ? a->capacity : *most_slots;
        *highest_base = a->number_base > *highest_base ? a->number_base : *highest_base;
    }
}

/* How many of a table's arrays are logged now. */
static size_t logged_arrays(const struct block_table *t)
{
    const struct block_directory *d = block_table_directory(t);
    const struct block_array *a;
    size_t n = 0;
    for (size_t i = 0; (a = block_directory_next(d, &i));)
        n += a->logged;
    return n;
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

/* A new block put as the heap hooks put one in direct mode
 * (trace/heap/heap_hooks.c, record_direct): the next entry of the log
 * appended to last, else its region's log, else the long way. */
static unsigned long cursor_appends;

static enum block_put put_direct(struct block_table *t, uintptr_t addr, uint64_t number, uint64_t word,
                                 uint64_t *replaced)
{
    if (block_table_append_next(t, addr, number, word)) {
        cursor_appends++;
        return BLOCK_PUT_NEW;
    }
    const struct block_region *r = block_table_near_region(t, addr);
    if (r && block_region_append_logged(t, r, addr, number, word))
        return BLOCK_PUT_NEW;
    return block_table_put(t, addr, number, word, replaced);
}

static void check(const struct run *r)
{
    run = r;
    memset(&table, 0, sizeof table);
    memset(&spill, 0, sizeof spill);
    memset(model_word, 0, sizeof model_word);
    memset(model_live, 0, sizeof model_live);
    scans = misses = cursor_appends = 0;
    if (r->packed)
        table.spill = &spill;
    table.start_class = r->start_class;
    uint64_t replaced;
    size_t logged_seen = 0;
    for (size_t i = 0; i < PINNED; i++) {
        model_live[i] = true;
        model_word[i] = word_of(i, 0);
        block_table_put(&table, address_of(i), 0, model_word[i], &replaced);
    }
    pthread_t thread;
    size_t live = PINNED, most_live = 0;
    unsigned long wrong = 0, replaced_wrong = 0, unseen_frees = 0;
    double most_bytes = 0;
    for (unsigned long step = 1; step <= STEPS; step++) {
        /* The reader from the fall on: while a report reads, the arrays a
         * table gives up wait (readers.h), and the first growth measures
         * the table's own memory. */
        if (step == FIRST_GROWTH) {
            reading = true;
            pthread_create(&thread, NULL, reader, NULL);
        }
        /* Live blocks grow to about 150,000, fall, and grow again. */
        bool growing = (step / FIRST_GROWTH) % 2 == 0;
        size_t i = PINNED + next_random() % (ADDRESSES - PINNED);
        /* Logged regions: numbers in runs of 8, as a heap that grows frees
         * little; its new blocks put as the hooks' direct mode puts them. */
        bool logged = r->start_class >= BLOCK_LOGGED_CLASS;
        uint64_t word = word_of(i, step), number = (logged ? step / 8 * 8 : step) * r->number_step, found_word;
        struct block_found f;
        int op = (int)(next_random() % 100);
        if (!model_live[i] && (growing ? op < 90 : op < 30)) {
            if ((logged ? put_direct : block_table_put)(&table, address_of(i), number, word, &replaced) != BLOCK_PUT_NEW)
                wrong++;
            model_live[i] = true;
            model_word[i] = word;
            live++;
        } else if (model_live[i] && op < 3) {
            /* Freed unseen, then handed out again: put while live. */
            unseen_frees++;
            enum block_put put = block_table_put(&table, address_of(i), number, word, &replaced);
            if (put != BLOCK_PUT_REPLACED || replaced != model_word[i])
                replaced_wrong++;
            model_word[i] = word;
        } else if (model_live[i]) {
            if (!find_word(i, &found_word, &f) || found_word != model_word[i] || f.block.number > number) {
                wrong++;
            } else {
                block_table_remove(&f);
                model_live[i] = false;
                live--;
            }
        } else if (block_table_find(&table, address_of(i), &f)) {
            wrong++;   /* found what is not live */
        }
        if (live > most_live)
            most_live = live;
        if (step == 2000)
            logged_seen = logged_arrays(&table);
        /* Bytes a block while the heap first grows. */
        if (r->packed && step < FIRST_GROWTH && table.count > 20000) {
            double bytes = (double)(block_table_bytes(&table) - block_table_bytes(&spill)) / (double)table.count;
            most_bytes = bytes > most_bytes ? bytes : most_bytes;
        }
    }
    /* At least one whole scan, whenever the reader was scheduled. */
    for (int waited = 0; !__atomic_load_n(&scans, __ATOMIC_RELAXED) && waited < 10000; waited++)
        usleep(1000);
    __atomic_store_n(&reading, false, __ATOMIC_RELEASE);
    pthread_join(thread, NULL);

    ok(wrong == 0,
       "%s: a million puts, finds and removes agree with the model (%lu disagreements; %zu live at most)",
       r->name, wrong, most_live);
    ok(unseen_frees > 0 && replaced_wrong == 0,
       "%s: a put of a live address replaces its block and gives back its word (%lu puts, %lu wrong)", r->name,
       unseen_frees, replaced_wrong);
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
    ok(table.count + spill.count == live, "%s: the tables' counts are the live blocks' (%zu + %zu, model %zu)", r->name,
       table.count, spill.count, live);
    size_t most_slots;
    uint64_t highest_base;
    arrays_of(&table, &most_slots, &highest_base);
    /* A region holds 4096 of the addresses (16 bytes apart). */
    ok(table.replaced >= 100 && most_slots < 8192,
       "%s: the table grew a region at a time (%zu arrays replaced; the largest has %zu slots, of %d addresses)",
       r->name, table.replaced, most_slots, ADDRESSES);
    if (r->all_pack)
        ok(cursor_appends > 0 && spill.count == 0,
           "%s: new blocks took the next entry of the log appended to last (%lu), and the spill none (%zu)", r->name,
           cursor_appends, spill.count);
    if (r->start_class >= BLOCK_LOGGED_CLASS)
        ok(logged_seen > 0 && logged_arrays(&table) < logged_seen,
           "%s: the regions started logged (%zu arrays at step 2000) and look-ups rebuilt them hashed (%zu left)",
           r->name, logged_seen, logged_arrays(&table));
    ok(scans > 0 && misses == 0,
       "%s: a reader scanning the regions' arrays never missed a block live all along (%lu scans, %lu misses)",
       r->name, scans, misses);
    if (r->packed && !r->all_pack) {
        /* What does not pack: 1 address in 7, 1 size in 11, and the pinned
         * blocks once their number fell behind the window. */
        ok(spill.count == spilled && (r->number_step > 1 ? spilled > live / 2 : spilled > live / 7 && spilled < live / 3),
           "%s: the blocks that do not pack are in the spill (%zu of %zu)", r->name, spilled, live);
        if (r->number_step > 1)
            ok(highest_base + (UINT64_C(1) << PACKED_NUMBER_BITS) > STEPS * r->number_step,
               "%s: the numbers ran past the packed window and new arrays took new bases (the highest %llu, the "
               "last number %llu)",
               r->name, (unsigned long long)highest_base, (unsigned long long)(STEPS * r->number_step));
        else
            /* Regions that grow side by side, with tombstones: each array
             * 58-88% full, a partly used slab of each size in between
             * (block_pool.c), empty slabs kept up to an eighth (or 64 KiB). */
            ok(most_bytes > 16 && most_bytes <= 48,
               "%s: the packed arrays take at most %.1f bytes a block they hold as 49 regions grow at random (at "
               "most 48)",
               r->name, most_bytes);
    }
}

/* A heap that grows in order, as issue 49's benchmark: a million blocks 48
 * bytes apart, put as the young slots let them go (64 KiB of addresses
 * late, here in order). New regions start at the size the others grew to:
 * few arrays are copied, and the table takes at most 30 bytes a block. */
/* An empty packed table: `t` with `spill` for what does not pack. */
static void packed_table(struct block_table *t, struct block_table *spill)
{
    memset(t, 0, sizeof *t);
    memset(spill, 0, sizeof *spill);
    t->spill = spill;
}

static void grow_in_order(void)
{
    static struct block_table grown, grown_spill;
    packed_table(&grown, &grown_spill);
    uint64_t replaced;
    size_t blocks = 1000000, failed = 0;
    for (size_t i = 0; i < blocks; i++)
        failed += block_table_put(&grown, 0x55550000 + i * 48, 0, BLOCK_WORD(16 + i % 32, i % 2000), &replaced) !=
                  BLOCK_PUT_NEW;
    double bytes = (double)block_table_bytes(&grown) / (double)grown.count;
    ok(failed == 0 && grown.count == blocks && grown_spill.count == 0, "in order: a million puts, all new and packed");
    ok(grown.replaced * 20 < grown.regions,
       "in order: %zu arrays of %zu regions were copied (new regions start at the size the others grew to)",
       grown.replaced, grown.regions);
    ok(bytes <= 16, "in order: the table takes %.1f bytes a block at a million (at most 16: a log entry of 8 bytes "
       "a block, the logs about three quarters full)", bytes);
}

/* The same heap put as the hooks' direct mode puts it (put_direct), at
 * one number: nearly every block takes the next entry of the log appended
 * to last; then every block found with its word. */
static void direct_in_order(void)
{
    static struct block_table grown, grown_spill;
    packed_table(&grown, &grown_spill);
    uint64_t replaced;
    size_t blocks = 1000000, failed = 0, wrong = 0;
    cursor_appends = 0;
    for (size_t i = 0; i < blocks; i++)
        failed += put_direct(&grown, 0x55550000 + i * 48, 7, BLOCK_WORD(16 + i % 32, i % 2000), &replaced) !=
                  BLOCK_PUT_NEW;
    for (size_t i = 0; i < blocks; i++) {
        struct block_found f;
        wrong += !block_table_find(&grown, 0x55550000 + i * 48, &f) || f.block.number != 7 ||
                 f.block.word != BLOCK_WORD(16 + i % 32, i % 2000);
    }
    ok(failed == 0 && wrong == 0 && grown.count == blocks && cursor_appends * 10 > blocks * 9,
       "in order, put direct: a million puts, %lu of them the next entry of the log appended to last; every block "
       "found with its number and word (%zu wrong)",
       cursor_appends, wrong);
}

/* The log appended to last, given up when its array is: blocks put
 * direct into one region; one of them found (its log rebuilt hashed), more
 * put direct there. Then blocks put direct into a second region; a block
 * of another region spilled (a thread's stack, tagged past 48 bits), and
 * more put direct into the second, still the log's next entries; a block of
 * the second region that does not pack spilled, and a block made again at
 * its address put direct (it replaces the spilled one), more put direct
 * there, none the log's next entry now. Every block found with its number
 * and word. */
static void cursor_given_up(void)
{
    static struct block_table t, t_spill;
    packed_table(&t, &t_spill);
    t.start_class = BLOCK_LOGGED_CLASS + 2;
    uint64_t replaced;
    const uintptr_t first = 0x66660000, second = first + 0x10000, again = second + 900 * 48;
    size_t failed = 0, wrong = 0;
    struct block_found f;
    for (size_t i = 0; i < 300; i++)
        failed += put_direct(&t, first + i * 48, 9, BLOCK_WORD(24, i), &replaced) != BLOCK_PUT_NEW;
    unsigned long before = cursor_appends;
    wrong += !block_table_find(&t, first + 150 * 48, &f);   /* the log rebuilt hashed */
    for (size_t i = 300; i < 600; i++)
        failed += put_direct(&t, first + i * 48, 9, BLOCK_WORD(24, i), &replaced) != BLOCK_PUT_NEW;
    bool after_hashed = cursor_appends == before;
    for (size_t i = 0; i < 300; i++)
        failed += put_direct(&t, second + i * 48, 9, BLOCK_WORD(24, i), &replaced) != BLOCK_PUT_NEW;
    bool second_logged = cursor_appends > before + 250;
    /* A region of its own bit in block_spill_may_hold's filter. */
    uintptr_t elsewhere = (uintptr_t)1 << 62 | first;
    while (block_spill_bit(elsewhere) == block_spill_bit(second))
        elsewhere += 0x10000;
    failed += block_table_put(&t, elsewhere, 9, BLOCK_WORD(24, 1), &replaced) != BLOCK_PUT_NEW;
    before = cursor_appends;
    for (size_t i = 300; i < 600; i++)
        failed += put_direct(&t, second + i * 48, 9, BLOCK_WORD(24, i), &replaced) != BLOCK_PUT_NEW;
    bool spill_elsewhere = cursor_appends > before + 250;
    failed += block_table_put(&t, again, 9, BLOCK_WORD((uint64_t)1 << 30, 5), &replaced) != BLOCK_PUT_NEW;
    bool spilled_here = t_spill.count == 2;
    before = cursor_appends;
    bool made_again = put_direct(&t, again, 9, BLOCK_WORD(24, 900), &replaced) == BLOCK_PUT_REPLACED &&
                      replaced == BLOCK_WORD((uint64_t)1 << 30, 5) && t_spill.count == 1;
    for (size_t i = 600; i < 900; i++)
        failed += put_direct(&t, second + i * 48, 9, BLOCK_WORD(24, i), &replaced) != BLOCK_PUT_NEW;
    bool spill_here = cursor_appends == before;
    for (size_t i = 0; i < 901; i++)
        for (uintptr_t region = first; region <= second; region += 0x10000)
            if (region == second || i < 600)
                wrong += !block_table_find(&t, region + i * 48, &f) || f.block.number != 9 ||
                         f.block.word != BLOCK_WORD(24, i);
    ok(failed == 0 && wrong == 0 && after_hashed && second_logged && spill_elsewhere && spilled_here && made_again &&
           spill_here && t.count + t_spill.count == 600 + 901 + 1,
       "the log appended to last: given up once its array is rebuilt hashed (%s); kept while the spill holds a "
       "block of another region (%s); given up while it holds one of its own (%s), and a block made again at that "
       "one's address replaces it (%s); every block found (%zu wrong)",
       after_hashed ? "yes" : "no", spill_elsewhere ? "yes" : "no", spill_here ? "yes" : "no",
       made_again ? "yes" : "no", wrong);
}

/* Logged arrays read while they are written: blocks put in order whose
 * numbers change every third block (a number entry every third), read by
 * another thread in order as a report reads them, each block it sees
 * checked against what was put; then every block found (which rebuilds
 * each region hashed from its log) with its number and word. */
#define LOGGED_BLOCKS 300000
static struct block_table logged_table, logged_spill;
static volatile bool log_reading;
static unsigned long log_read, log_wrong;

static uintptr_t logged_address(size_t i)
{
    return 0x7000000000 + i * 40;
}

static uint64_t logged_number(size_t i)
{
    return 5 + i / 3;
}

static uint64_t logged_word(size_t i)
{
    return BLOCK_WORD(i % 5 == 0 ? (UINT64_C(1) << LOG_SIZE_BITS) - 1 - i : 8 + i % 200, i * 7 % BLOCK_ORIGIN_MAX);
}

static volatile bool log_reader_started;

static void *log_reader(void *unused)
{
    (void)unused;
    __atomic_store_n(&log_reader_started, true, __ATOMIC_RELEASE);
    while (__atomic_load_n(&log_reading, __ATOMIC_ACQUIRE)) {
        readers_enter();
        const struct block_directory *d = block_table_directory(&logged_table);
        const struct block_array *a;
        for (size_t i = 0; (a = block_directory_next(d, &i));) {
            if (!a->logged)
                continue;
            struct block_slot b;
            uint64_t number = a->number_base;
            for (size_t e = 0; block_log_next(a, block_log_entries(a->capacity), &e, &number, &b);) {
                size_t k = (size_t)((b.addr - logged_address(0)) / 40);
                log_read++;
                log_wrong += k >= LOGGED_BLOCKS || b.addr != logged_address(k) || b.number != logged_number(k) ||
                             b.word != logged_word(k);
            }
        }
        readers_leave();
    }
    return NULL;
}

static void log_in_order(void)
{
    packed_table(&logged_table, &logged_spill);
    logged_table.start_class = BLOCK_LOGGED_CLASS + 2;
    log_reading = true;
    pthread_t thread;
    pthread_create(&thread, NULL, log_reader, NULL);
    /* The reader running before the puts start, and reading until it has
     * read something: on a loaded machine it may be scheduled only after
     * the writer is done (0 read, as a CI run once saw). */
    while (!__atomic_load_n(&log_reader_started, __ATOMIC_ACQUIRE))
        sched_yield();
    uint64_t replaced;
    size_t failed = 0;
    for (size_t i = 0; i < LOGGED_BLOCKS; i++)
        failed += block_table_put(&logged_table, logged_address(i), logged_number(i), logged_word(i), &replaced) !=
                  BLOCK_PUT_NEW;
    for (int waited = 0; !__atomic_load_n(&log_read, __ATOMIC_RELAXED) && waited < 10000; waited++)
        usleep(1000);
    __atomic_store_n(&log_reading, false, __ATOMIC_RELEASE);
    pthread_join(thread, NULL);
    size_t logged = logged_arrays(&logged_table);
    ok(failed == 0 && logged_table.count == LOGGED_BLOCKS && logged * 2 > logged_table.regions,
       "logs: %d puts in order, all new, their regions still logged (%zu of %zu)", LOGGED_BLOCKS, logged,
       logged_table.regions);
    ok(log_read > 0 && log_wrong == 0,
       "logs: a reader read the logs as they were written, every block with its number and word (%lu read, %lu "
       "wrong)",
       log_read, log_wrong);
    size_t wrong = 0;
    for (size_t i = 0; i < LOGGED_BLOCKS; i++) {
        struct block_found f;
        wrong += !block_table_find(&logged_table, logged_address(i), &f) || f.block.number != logged_number(i) ||
                 f.block.word != logged_word(i);
    }
    ok(wrong == 0 && logged_arrays(&logged_table) == 0,
       "logs: rebuilt hashed by look-ups, every block found with its number and word (%zu wrong)", wrong);
}

/* Past the first, the pool's chunks lie on huge pages' boundaries, so that
 * they can be huge pages whole: each probe of a large table a TLB miss less
 * (issue 49's grow, the hooks alone: 7% faster). Blocks 64 bytes apart:
 * arrays small enough for the pool's slabs. */
static void chunks_on_huge_pages(void)
{
    static struct block_table t, t_spill;
    packed_table(&t, &t_spill);
    uint64_t replaced;
    char *first = NULL;
    for (size_t i = 0; i < 400000; i++) {
        block_table_put(&t, 0x55550000 + i * 64, 0, BLOCK_WORD(48, 1), &replaced);
        if (!first)
            first = t.pool.chunk_end;
    }
    uintptr_t huge = (uintptr_t)2 << 20, end = (uintptr_t)t.pool.chunk_end;
    ok(first && end && t.pool.chunk_end != first && end % huge == 0 && (end - (4u << 20)) % huge == 0,
       "chunks: the pool's latest chunk of 4 MiB lies on 2 MiB boundaries (%p, the first ended at %p)",
       (void *)end, (void *)first);
}

/* The thread's minor page faults so far. */
static long faults_now(void)
{
    struct rusage u;
    getrusage(RUSAGE_THREAD, &u);
    return u.ru_minflt;
}

/* The smallest size class whose packed arrays hold `bytes` of slots. */
static unsigned class_of_at_least(size_t bytes)
{
    unsigned size_class = 0;
    while (block_pool_capacity(size_class) * block_words(true) * sizeof(uint64_t) < bytes)
        size_class++;
    return size_class;
}

/* A small pool's new arrays (its slabs not populated), one cut from a
 * slab and one mapped alone, have their pages written before they are
 * handed out: a probe's first read of a page would map the zero page, and
 * its first write fault again, which in a process whose threads run on
 * other CPUs interrupts each to flush its TLB (issue 49's churn: 1.7% of
 * its samples; two threads keeping 1M small blocks each: half their time).
 * So reading each page, then writing it, faults no more; and the array
 * reads as empty. */
static void array_written_first(struct block_pool *pool, size_t at_least, const char *kind)
{
    unsigned size_class = class_of_at_least(at_least);
    struct block_array *a = block_pool_take(pool, size_class, true);
    size_t bytes = block_pool_capacity(size_class) * block_words(true) * sizeof(uint64_t), pages = 0, nonzero = 0;
    long before = faults_now();
    for (size_t at = 0; a && at < bytes; at += 4096, pages++)
        nonzero += ((volatile uint64_t *)a->slots)[at / sizeof(uint64_t)] != 0;
    for (size_t at = 0; a && at < bytes; at += 4096)
        ((volatile uint64_t *)a->slots)[at / sizeof(uint64_t)] = 1;
    long faults = faults_now() - before;
    ok(a && pages >= 5 && faults == 0 && nonzero == 0,
       "a small pool's new array %s, %zu bytes: its %zu pages read then written with %ld page faults (0), "
       "%zu read not empty (0)", kind, bytes, pages, faults, nonzero);
}

static void arrays_written_first(void)
{
    static struct block_pool pool;
    array_written_first(&pool, (size_t)20 << 10, "cut from a slab");
    array_written_first(&pool, (size_t)200 << 10, "mapped alone");
}

/* A slab emptied in a small pool is kept as it is for the next arrays
 * (block_pool.c: up to 64 KiB of its pages, or an eighth of a pool of more
 * than 512 KiB): purging it made a growing table fault the same pages in
 * again and again, and each purge interrupted the program's other CPUs.
 * Beyond the bound, emptied slabs give their pages back. */
static void empty_slabs_kept(void)
{
    static struct block_pool small, large;
    enum { SMALL = 2, SLABS = 6, PER_SLAB = 3, LARGE = SLABS * PER_SLAB };
    unsigned small_class = class_of_at_least((size_t)8 << 10);   /* about 24 KiB of a slab written */
    struct block_array *a[LARGE];
    bool taken = true;
    for (int i = 0; i < SMALL; i++)
        taken = taken && (a[i] = block_pool_take(&small, small_class, true)) != NULL;
    for (int i = SMALL - 1; taken && i >= 0; i--)
        block_pool_give_back(&small, a[i]);
    size_t kept = small.empty_written;
    long before = faults_now();
    bool zero = true;
    for (int i = 0; taken && i < SMALL; i++) {
        taken = (a[i] = block_pool_take(&small, small_class, true)) != NULL;
        for (size_t w = 0; taken && w < block_pool_capacity(small_class) * block_words(true); w++)
            zero = zero && a[i]->slots[w] == 0;
    }
    long faults = faults_now() - before;
    ok(taken && kept > 0 && faults == 0 && zero,
       "a small pool's slab emptied (%zu KiB kept) and filled again: %ld page faults (0), its arrays read empty",
       kept >> 10, faults);

    unsigned large_class = class_of_at_least((size_t)24 << 10);   /* 24-40 KiB: three to a slab */
    for (int i = 0; taken && i < LARGE; i++)
        taken = (a[i] = block_pool_take(&large, large_class, true)) != NULL;
    size_t full = large.bytes, bound = full / 8 > ((size_t)64 << 10) ? full / 8 : (size_t)64 << 10;
    for (int i = LARGE - 1; taken && i >= 0; i--)
        block_pool_give_back(&large, a[i]);
    ok(taken && large.empty_written <= bound && large.bytes == large.empty_written && large.bytes < full,
       "%d slabs emptied: %zu KiB of them kept (at most %zu), the pool down from %zu KiB", SLABS,
       large.empty_written >> 10, bound >> 10, full >> 10);
}

/* The stamps a reader in another process checks an array by (memprof
 * top, doc/tables.md): odd while handed out and never the same twice; gone
 * (even) once given back, though its memory still reads; and another when
 * the same memory is handed out again. */
static void stamps_checked(void)
{
    static struct block_pool pool;
    enum { TAKEN = 64 };
    struct block_array *a[TAKEN];
    uint64_t stamp[TAKEN];
    bool odd = true, distinct = true;
    for (int i = 0; i < TAKEN; i++) {
        a[i] = block_pool_take(&pool, (unsigned)i % 4, true);
        stamp[i] = a[i] ? a[i]->stamp : 0;
        odd = odd && (stamp[i] & 1);
        for (int j = 0; j < i; j++)
            distinct = distinct && stamp[j] != stamp[i];
    }
    ok(odd && distinct, "64 arrays handed out: each stamp odd, no two the same");
    struct block_array *given = a[TAKEN - 1];
    block_pool_give_back(&pool, given);
    ok(!(given->stamp & 1), "an array given back: its stamp gone (0x%llx, even)", (unsigned long long)given->stamp);
    struct block_array *again = block_pool_take(&pool, (unsigned)(TAKEN - 1) % 4, true);
    bool fresh = again && (again->stamp & 1);
    for (int i = 0; fresh && i < TAKEN; i++)
        fresh = again->stamp != stamp[i];
    ok(again == given && fresh, "... its memory handed out again: a stamp it never held (%s)",
       again == given ? "the same array" : "another array");

    /* A region's array replaced by the table: the old one's stamp gone. */
    static struct block_table t, t_spill;
    packed_table(&t, &t_spill);
    uint64_t replaced;
    for (uintptr_t i = 0; i < 1000; i++)   /* an array cut from a slab: it stays mapped, given back */
        block_table_put(&t, 0x7f0000100000 + i * 48, i, BLOCK_WORD(16, 0), &replaced);
    struct block_region *r = block_table_find_region(&t, block_region_key(0x7f0000100000));
    struct block_array *before = r ? r->array : NULL;
    uint64_t before_stamp = before ? before->stamp : 0;
    struct block_array *after = r ? block_table_rebuild(&t, r, 1000, false) : NULL;
    ok(before && after && after != before && (before_stamp & 1) && (after->stamp & 1) &&
           after->stamp != before_stamp && !(before->stamp & 1),
       "a region's array rebuilt: the new one stamped anew, the old one's stamp gone");
}

int main(void)
{
    static const struct run runs[] = {
        { "wide", false, 1, 0, false },
        /* 1000 a step: 10^9 in all, the 2^28 window passed three times */
        { "packed", true, 1, 0, false },
        { "rebased", true, 1000, 0, false },
        /* regions logged from the start: a look-up or a put where a block
         * may be rebuilds one hashed (store/block_table.h) */
        { "logged", true, 1, BLOCK_LOGGED_CLASS + 2, false },
        { "logged, rebased", true, 1000, BLOCK_LOGGED_CLASS + 2, false },
        /* and with an empty spill, as most programs' (the hooks' direct
         * mode then takes the next entry of a log: block_table_append_next) */
        { "logged, all packing", true, 1, BLOCK_LOGGED_CLASS + 2, true },
    };
    for (size_t k = 0; k < sizeof runs / sizeof *runs; k++)
        check(&runs[k]);
    grow_in_order();
    direct_in_order();
    cursor_given_up();
    log_in_order();
    chunks_on_huge_pages();
    arrays_written_first();
    empty_slabs_kept();
    stamps_checked();
    return tap_done();
}
