/* The C heap tracer's hooks.
 *
 * Every allocation function is hooked through the GOT of every object, libc
 * included (libc calls its own malloc through its GOT: strdup, fopen...).
 * A hook touches only its own thread's tables (heap_thread.h): no lock, and
 * for a block freed by the thread that allocated it, no atomic instruction
 * and no cache line another thread writes.
 *
 * Order across threads: a block freed by one thread and handed out again to
 * another must count as freed before it is allocated again. A free of a
 * block its thread does not hold takes a number from one atomic counter
 * before the real free runs; an allocation only reads the counter, after
 * the real allocation returned. So an allocation that reuses a freed block
 * reads a number past that free's, and a free of a block reads one at or
 * past its allocation's: (number, allocation before free) orders the events
 * at one address, and the report applies that order. A thread frees a block
 * it holds without a number only while no number was taken since the
 * allocation: otherwise the block may have been freed by another thread and
 * its address handed out again, and this free may be of that later block. */
#include "heap.h"
#include "heap_ruby.h"
#include "heap_thread.h"
#include "heap_cxx.h"
#include "heap_hooks.h"
#include "heap_sample.h"
#include "heap_peak.h"
#include "heap_wrappers.h"
#include "heap_sample_sites.h"
#include "heap_origins.h"
#include "../../hook/got.h"
#include "../../hook/signal_guard.h"
#include "../../util/pages.h"
#include "../../util/reentry.h"
#include "../../unwind/backtrace.h"
#include "../../objfile/object.h"
#include "../../util/environment.h"
#include <dlfcn.h>
#include <malloc.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

__thread struct heap_thread *heap_my_thread __attribute__((tls_model("initial-exec")));
/* The same for the short paths, never NULL (memprof_thread_words, beside
 * the reentry flag): a thread with no record yet has the empty one, whose
 * last site and young slots match no call and no block (it is only read),
 * so those paths test nothing more. */
struct heap_thread heap_no_record;
#define short_path_thread (memprof_thread_words.heap_short_path)
/* short_path_thread read afresh, its TLS offset too, before a call: read
 * in C, GCC kept the offset in a saved register across the call, which
 * cost the hook a second saved register and a stack adjustment. After the
 * call, C reads it with the flag, by one offset. */
static inline __attribute__((always_inline)) struct heap_thread *short_path_thread_now(void)
{
#if defined(__x86_64__)
    struct heap_thread *t;
    __asm__ volatile("movq memprof_thread_words@gottpoff(%%rip), %0\n\tmovq %%fs:%c1(%0), %0"
                     : "=r"(t) : "i"(offsetof(struct thread_words, heap_short_path)));
    return t;
#else
    return short_path_thread;
#endif
}
/* The same after malloc's call, with the reentry flag's test by the same
 * offset: in C, GCC loaded the offset before the call and kept it in a
 * saved register (one more saved register, a stack adjustment). */
static inline __attribute__((always_inline)) struct heap_thread *short_path_thread_inside(bool *inside)
{
#if defined(__x86_64__)
    struct heap_thread *t;
    uintptr_t offset;
    __asm__ volatile("movq memprof_thread_words@gottpoff(%%rip), %0\n\t"
                     "movq %%fs:%c3(%0), %1\n\t"
                     "cmpl $0, %%fs:%c4(%0)"
                     : "=&r"(offset), "=r"(t), "=@ccne"(*inside)
                     : "i"(offsetof(struct thread_words, heap_short_path)),
                       "i"(offsetof(struct thread_words, in_runtime)));
    return t;
#else
    *inside = reentry_inside();
    return short_path_thread;
#endif
}
/* Bytes to this thread's next sample point (heap_sample.h), apart from its
 * record so that sampling's common case reads nothing else; 0 until the
 * thread's first recorded allocation sets it, and while a C++ new's charge
 * waits (heap_charge_begin), so that those take the body. */
static __thread int64_t sample_left __attribute__((tls_model("initial-exec")));

static struct heap_thread *this_thread(void)
{
    if (heap_my_thread)
        return heap_my_thread;
    struct heap_thread *t = heap_record_take();
    if (!t)
        return NULL;
    if (heap.sample_bytes)
        sample_left = sample_interval(&t->sample_state, heap.sample_bytes);
    short_path_thread = t;
    return heap_my_thread = t;
}

struct heap_thread *heap_thread_record(void)
{
    return this_thread();
}

/* --- the hooks' work --------------------------------------------------------- */

/* An allocation's number: the next free's, read after the real allocation
 * returned (on x86 a load is not reordered before the allocator's loads). */
static uint64_t read_number(void)
{
    return __atomic_load_n(&heap.next_number, __ATOMIC_SEQ_CST);
}

/* A number is still the next free's: one compare with the counter in
 * memory (an x86 load, as read_number's), where GCC loads an atomic into a
 * register first, one instruction more on every free. */
static bool number_is_current(uint64_t number)
{
#if defined(__x86_64__)
    bool current;
    __asm__("cmpq %2, %1" : "=@cce"(current) : "r"(number), "m"(heap.next_number));
    return current;
#else
    return number == __atomic_load_n(&heap.next_number, __ATOMIC_SEQ_CST);
#endif
}

/* A free's number: its own. */
static uint64_t take_number(void)
{
    return __atomic_fetch_add(&heap.next_number, 1, __ATOMIC_SEQ_CST);
}

static bool tracing(void)
{
    return __atomic_load_n(&heap.running, __ATOMIC_RELAXED);
}

#define HOT static inline __attribute__((always_inline))
/* Out of line, but not `cold`: GCC takes a path that may call a cold
 * function for one never taken, and had moved the whole record path of
 * malloc's hook into .text.unlikely. */
#define COLD static __attribute__((noinline))

/* --- sampling by bytes (heap_sample.h) ------------------------------------- */

/* Blocks 512 KiB apart share an entry: a false "maybe", never a miss. */
HOT uint8_t *filter_entry(uintptr_t p)
{
    return &heap.sampled_filter[SAMPLED_FILTER_INDEX(p)];
}

/* The next sample point, out of line: the hooks' common path stays short. */
COLD void next_sample_point(struct heap_thread *t)
{
    sample_left = sample_interval(&t->sample_state, heap.sample_bytes);
}

/* Whether this allocation holds a sample point; every one without sampling. */
HOT bool sample_this(struct heap_thread *t, size_t size)
{
    if (__builtin_expect(!heap.sample_bytes, 1))
        return true;
    if ((sample_left -= (int64_t)(size < ((size_t)1 << 62) ? size : (size_t)1 << 62)) > 0)
        return false;
    next_sample_point(t);
    return true;
}

/* A recorded block's bytes as its origin counts them: scaled when sampled. */
HOT uint64_t counted_bytes(uint64_t size)
{
    return heap.sample_bytes ? sample_scaled_bytes(size, heap.sample_bytes) : size;
}

/* The blocks a sampled block stands for, rounded at random to a whole
 * number so the totals stay unbiased. */
static uint64_t counted_blocks(struct heap_thread *t, uint64_t size)
{
    if (!heap.sample_bytes)
        return 1;
    uint64_t w = sample_weight(size, heap.sample_bytes);
    uint64_t fraction = w & (SAMPLE_WEIGHT_ONE - 1);
    return w / SAMPLE_WEIGHT_ONE + ((sample_random(&t->sample_state) & (SAMPLE_WEIGHT_ONE - 1)) < fraction);
}

/* Can a block this thread or another recorded live at `p`? No, with
 * sampling, when its filter entry is 0: most frees end here. */
HOT bool maybe_recorded(uintptr_t p)
{
    return !heap.sample_bytes || __atomic_load_n(filter_entry(p), __ATOMIC_RELAXED) != 0;
}

/* A sampled block's scaling, out of line: a call to the math library in the
 * hooks' common path would make them save registers on every call. */
COLD void forget_sampled(struct heap_thread *t, uintptr_t p, uint64_t word)
{
    t->grow_frees++;
    owner_add(&t->origins->records[BLOCK_WORD_ORIGIN(word)].freed_bytes, counted_bytes(BLOCK_WORD_SIZE(word)));
    uint8_t *entry = filter_entry(p), n = __atomic_load_n(entry, __ATOMIC_RELAXED);
    while (n != SAMPLED_FILTER_STUCK && n != 0 &&
           !__atomic_compare_exchange_n(entry, &n, (uint8_t)(n - 1), true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

HOT void forget_exact(struct heap_thread *t, uint64_t word)
{
    struct heap_origin *r = &t->origins->records[BLOCK_WORD_ORIGIN(word)];
    owner_add(&r->freed_bytes, BLOCK_WORD_SIZE(word));
    owner_add(&r->freed_count, 1);
    t->grow_frees++;   /* (record_direct) */
}

/* The owner's live figures: the block at `p` it held is gone. */
HOT void forget(struct heap_thread *t, uintptr_t p, uint64_t word)
{
    if (__builtin_expect(heap.sample_bytes != 0, 0))
        forget_sampled(t, p, word);
    else
        forget_exact(t, word);
}

/* What a recorded block of `stored` bytes counts for, with sampling; its
 * filter entry counted before another thread can be given the block.
 * Returned in registers: pointers to the caller's figures would put them
 * in memory on every allocation. */
struct block_weight {
    uint64_t bytes, blocks;
};

COLD struct block_weight count_sampled(struct heap_thread *t, uintptr_t p, uint64_t stored)
{
    uint8_t *entry = filter_entry(p), n = __atomic_load_n(entry, __ATOMIC_RELAXED);
    while (n != SAMPLED_FILTER_STUCK &&
           !__atomic_compare_exchange_n(entry, &n, (uint8_t)(n + 1), true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
    return (struct block_weight){ counted_bytes(stored), counted_blocks(t, stored) };
}

/* A young slot emptied before its next block is written: a report (a
 * signal handler's too) never takes one block's address with another's
 * number and word. */
HOT void empty_young(struct block_slot *y)
{
    __atomic_store_n(&y->addr, BLOCK_EMPTY, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

/* A block into the ring's next leaving slot (emptied when the other half
 * was settled): true when that filled half the ring. The block in young
 * slot `y` leaves it so: copied there before `y` is emptied (a report
 * reading young slots first sees it once or twice, never not at all); the
 * caller stores the new block in `y`, then settles the other half
 * (settle_leaving), where no register of its own is kept. */
HOT bool ring_push(struct heap_thread *t, uintptr_t p, uint64_t number, uint64_t word)
{
    struct block_slot *l = &t->young[YOUNG_SLOTS + t->leaving_next];
    t->ring_empty = false;
    __atomic_store_n(&l->number, number, __ATOMIC_RELAXED);
    __atomic_store_n(&l->word, word, __ATOMIC_RELAXED);
    __atomic_store_n(&l->addr, p, __ATOMIC_RELEASE);
    t->leaving_next = (t->leaving_next + 1) & (LEAVING_SLOTS - 1);
    return t->leaving_next % LEAVING_HALF == 0;
}

HOT bool leave_young(struct heap_thread *t, struct block_slot *y)
{
    bool half = ring_push(t, y->addr, y->number, y->word);
    empty_young(y);
    return half;
}

/* Make room in a young slot for the block at `p`: the block there is gone
 * if it is at `p` (its free was not seen), else it leaves (leave_young:
 * true when the caller settles the ring). */
HOT bool vacate(struct heap_thread *t, struct block_slot *y, uintptr_t p)
{
    if (y->addr != p)
        return leave_young(t, y);
    forget(t, p, y->word);
    empty_young(y);
    return false;
}

/* A block into the older table; an older one it replaces there is gone. */
HOT void put_older(struct heap_thread *t, uintptr_t q, uint64_t number, uint64_t word)
{
    uint64_t old;
    switch (block_table_put_packed(&t->blocks, q, number, word, &old)) {
    case BLOCK_PUT_REPLACED:   /* an older block there, freed unseen */
        forget(t, q, old);
        break;
    case BLOCK_PUT_NO_MEMORY:
        forget(t, q, word);
        t->dropped++;
        break;
    case BLOCK_PUT_NEW:
        break;
    }
}

/* A leaving block into the older table, written there before its leaving
 * slot is emptied; none if it was freed meanwhile. Its address allocated
 * again since (its free was not seen; the new block may be the one just
 * stored): gone. */
HOT void settle_one(struct heap_thread *t, struct block_slot *l)
{
    uintptr_t q = l->addr;
    if (q == BLOCK_EMPTY)
        return;
    if (heap_young_slot(t, q)->addr == q)
        forget(t, q, l->word);
    else
        put_older(t, q, l->number, l->word);
    __atomic_store_n(&l->addr, BLOCK_EMPTY, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

/* --- a heap that only grows: new blocks straight to the table ---------------- */

/* A young slot is worth its line when its block is freed while young. A
 * thread whose blocks outlive the next 64 KiB of allocations only passes
 * them on: each allocation writes a slot out of the cache and reads it
 * back at the next eviction. Such a thread puts its new blocks in the
 * table itself (t->direct), its young slots and ring kept empty, so no
 * older block at the same address waits there. Decided each GROW_WINDOW
 * blocks put in the table (evicted, or put direct) by the blocks the
 * thread held that went meanwhile: few, direct; more, young slots again. */
#define GROW_WINDOW 8192u
#define GROW_ENTER_FREES (GROW_WINDOW / 64)
#define GROW_LEAVE_FREES (GROW_WINDOW / 16)

/* Direct from now: the ring settled, oldest first, then every young block
 * put in the table before its slot is emptied (a report sees it once or
 * twice, never not at all). */
COLD void enter_direct(struct heap_thread *t)
{
    for (unsigned i = 0; i < LEAVING_SLOTS; i++)
        settle_one(t, &t->young[YOUNG_SLOTS + (t->leaving_next + i) % LEAVING_SLOTS]);
    t->ring_empty = true;
    for (unsigned i = 0; i < YOUNG_SLOTS; i++) {
        struct block_slot *y = &t->young[i];
        if (y->addr != BLOCK_EMPTY) {
            put_older(t, y->addr, y->number, y->word);
            empty_young(y);
        }
    }
    t->direct = true;
}

/* A window's end: direct or not, from the blocks gone in it. */
COLD void grow_window_end(struct heap_thread *t)
{
    bool few_gone = t->grow_frees <= GROW_ENTER_FREES, many_gone = t->grow_frees > GROW_LEAVE_FREES;
    if (t->direct)
        __atomic_store_n(&t->grown_direct, t->grown_direct + t->grow_puts, __ATOMIC_RELAXED);
    t->grow_puts = 0;
    t->grow_frees = 0;
    if (!t->direct && few_gone)
        enter_direct(t);
    else if (t->direct && many_gone)
        t->direct = false;
}

/* `n` more blocks put in the table (evictions, or direct): true when
 * that ends the window (the caller then calls grow_window_end, or a tail
 * call does). */
HOT bool grow_window_full(struct heap_thread *t, uint32_t n)
{
    return __builtin_expect((t->grow_puts += n) >= GROW_WINDOW, 0);
}

HOT void count_grow_puts(struct heap_thread *t, uint32_t n)
{
    if (grow_window_full(t, n))
        grow_window_end(t);
}

/* Half the ring just filled: the table slots of its blocks fetched into
 * the cache, and the other half, fetched when it filled LEAVING_HALF
 * evictions ago, put in the table (emptied for the next to fill), so that
 * the misses of a table of many MB are off the allocations' path. One call
 * for LEAVING_HALF evictions. */
COLD void settle_leaving(struct heap_thread *t)
{
    struct block_slot *filled = &t->young[YOUNG_SLOTS + (t->leaving_next ^ LEAVING_HALF)];
    struct block_slot *settled = &t->young[YOUNG_SLOTS + t->leaving_next];
    /* A table whose puts go to logged arrays writes them in order: nothing
     * to fetch ahead. */
    for (unsigned i = 0; i < LEAVING_HALF && !t->blocks.logged_lately; i++)
        if (filled[i].addr != BLOCK_EMPTY)   /* none if freed from the ring */
            block_table_prefetch_packed(&t->blocks, filled[i].addr);
    for (unsigned i = 0; i < LEAVING_HALF; i++)
        settle_one(t, &settled[i]);
    /* Puts that take logged arrays' next slots need no fetching ahead: the
     * newer half too, and the ring is empty (record_known_straight). */
    bool both = t->blocks.logged_lately;
    if (both) {
        for (unsigned i = 0; i < LEAVING_HALF; i++)
            settle_one(t, &filled[i]);
        t->ring_empty = true;
    }
    count_grow_puts(t, both ? LEAVING_SLOTS : LEAVING_HALF);
}

/* A block put in the table by a thread in direct mode. A region already
 * hashed takes it through the ring, its slot fetched meanwhile
 * (settle_leaving): a heap that grows again into the places it freed puts
 * each block in a line of its own, out of the cache (bench/dense.c, whose
 * two threads make again 500,000 blocks of 24 bytes each: 0.31 s put at
 * once, 0.26 s through the ring, 0.12 s plain). Only those: a block waits
 * in the ring only while its region is hashed, which it stays, so a block
 * made again at its address follows it there, never into a log before it
 * (record_direct). */
HOT void put_direct(struct heap_thread *t, uintptr_t p, uint64_t number, uint64_t word)
{
    const struct block_region *r = block_table_region(&t->blocks, p);
    if (r && !r->logged) {
        if (ring_push(t, p, number, word))
            settle_leaving(t);
        return;
    }
    put_older(t, p, number, word);
    count_grow_puts(t, 1);
}

/* The short path's: the entry is the hook's own (its return address is
 * the site). */
HOT uint32_t remembered_origin(struct heap_thread *t, uintptr_t site, uintptr_t entry_cfa, uintptr_t entry_bp)
{
    return memo_origin(t, &t->memos[unwind_memo_slot(site, entry_cfa)], site, site, entry_cfa,
                       callers_bp(entry_cfa, entry_bp));
}

COLD struct heap_thread *first_use(void)
{
    return tracing() ? this_thread() : NULL;
}

bool heap_charge_begin(void *site, size_t min, size_t max)
{
    struct heap_thread *t = heap_my_thread;
    if ((!t && !(t = first_use())) || t->charge_site)
        return false;
    t->charge_min = min;
    t->charge_max = max;
    t->charge_site = site;
    t->last_site = 0;   /* malloc_sites takes the charge's malloc elsewhere */
    t->charge_sample_left = sample_left;   /* the next malloc takes the body */
    sample_left = 0;
    return true;
}

void heap_charge_end(void)
{
    struct heap_thread *t = heap_my_thread;
    if (t && t->charge_site) {   /* not taken: the new threw, or was memprof's */
        t->charge_site = NULL;
        sample_left = t->charge_sample_left;
    }
}

/* A block recorded in its young slot `y`, found empty, and counted for its
 * origin: `blocks` and `bytes` (scaled when sampled; `stored` is its size). */
HOT void write_young(struct block_slot *y, uintptr_t p, uint64_t number, uint64_t word)
{
    __atomic_store_n(&y->number, number, __ATOMIC_RELAXED);
    __atomic_store_n(&y->word, word, __ATOMIC_RELAXED);
    __atomic_store_n(&y->addr, p, __ATOMIC_RELEASE);
}

HOT void count_block(struct heap_origin *r, uint64_t blocks, uint64_t bytes)
{
    uint64_t made = r->total_bytes + bytes;   /* only the owner writes it */
    owner_add(&r->total_count, blocks);
    __atomic_store_n(&r->total_bytes, made, __ATOMIC_RELAXED);
    owner_raise(&r->peak_bytes, made - r->freed_bytes);
}

HOT void store_young(struct block_slot *y, uintptr_t p, uint64_t number, uint64_t stored, uint64_t origin_word,
                     struct heap_origin *r, uint64_t blocks, uint64_t bytes)
{
    write_young(y, p, number, stored | origin_word);
    count_block(r, blocks, bytes);
}

HOT uint64_t stored_size(size_t size)
{
    return size < BLOCK_SIZE_MAX ? size : BLOCK_SIZE_MAX;
}

/* The record of an allocation, once recording_thread said where. */
HOT void record_alloc(struct heap_thread *t, void *p, size_t size, void *site, uintptr_t entry_pc,
                      uintptr_t entry_cfa, uintptr_t entry_bp)
{
    uint64_t number = read_number();
    uint64_t key = (uintptr_t)site | (uint64_t)t->serial << THREAD_SHIFT;
    uint32_t origin = key == t->last_key && !heap_ruby_enabled()
                          ? BLOCK_WORD_ORIGIN(t->last_origin_word)
                          : heap_full_origin(t, (uintptr_t)site, entry_pc, entry_cfa, entry_bp);
    if (__builtin_expect(origin == UINT32_MAX, 0)) {
        t->dropped++;
        return;
    }
    uint64_t stored = stored_size(size);
    struct block_weight w = { stored, 1 };
    if (__builtin_expect(heap.sample_bytes != 0, 0))
        w = count_sampled(t, (uintptr_t)p, stored);
    uint64_t bytes = w.bytes;
    if (__builtin_expect(t->direct, 0)) {
        count_block(&t->origins->records[origin], w.blocks, bytes);
        put_direct(t, (uintptr_t)p, number, stored | BLOCK_WORD(0, origin));
    } else {
        struct block_slot *y = heap_young_slot(t, (uintptr_t)p);
        bool full = __builtin_expect(y->addr != BLOCK_EMPTY, 0) && vacate(t, y, (uintptr_t)p);
        store_young(y, (uintptr_t)p, number, stored, BLOCK_WORD(0, origin), &t->origins->records[origin],
                    w.blocks, bytes);
        if (full)
            settle_leaving(t);
    }
    if (__builtin_expect(heap.peak_tracking, 0))   /* last: a snapshot has this block */
        heap_peak_grew(t, bytes);
}

/* The checks before a record: the thread that records the block at `p`
 * (a sample point, with sampling), or NULL. May charge *site elsewhere. */
HOT struct heap_thread *recording_thread(void *p, size_t size, void **site)
{
    struct heap_thread *t = heap_my_thread;
    if (__builtin_expect(!t, 0) && !(t = first_use()))
        return NULL;
    if (!p || ((uintptr_t)p & BLOCK_GONE_BIT) || !tracing())
        return NULL;
    if (__builtin_expect(t->charge_site != NULL, 0)) {   /* a C++ new's malloc */
        if (size >= t->charge_min && size <= t->charge_max)
            *site = t->charge_site;
        t->charge_site = NULL;
        sample_left = t->charge_sample_left;
    }
    return sample_this(t, size) ? t : NULL;
}

HOT void note_alloc(void *p, size_t size, void *site)
{
    struct heap_thread *t = recording_thread(p, size, &site);
    if (t)
        record_alloc(t, p, size, site, 0, 0, 0);
}

/* With sampling, most allocations record nothing: the record apart, so that
 * those save few registers. */
static __attribute__((noinline)) void record_sampled(struct heap_thread *t, void *p, size_t size, void *site)
{
    record_alloc(t, p, size, site, 0, 0, 0);
}

/* A block this thread holds at `p`: in a young slot, or found in its
 * older table (or that table's spill). */
struct held {
    struct block_slot *young;
    struct block_found found;
};

static bool find_held(struct heap_thread *t, uintptr_t p, struct held *h)
{
    /* Direct, the young slots are empty (and their line out of the cache);
     * an empty ring has nothing either. The newest block at `p` is the one
     * freed: the ring may also hold an older one whose free was not seen (a
     * signal handler's, freed while it interrupted a hook), so it is read
     * from the last block pushed back. */
    if (!t->direct && (h->young = heap_young_slot(t, p))->addr == p)
        return true;
    for (unsigned i = 1; i <= LEAVING_SLOTS && !t->ring_empty; i++)
        if ((h->young = &t->young[YOUNG_SLOTS + ((t->leaving_next - i) & (LEAVING_SLOTS - 1))])->addr == p)
            return true;
    h->young = NULL;
    return block_table_find(&t->blocks, p, &h->found);
}

/* The number a held block was recorded with. */
static uint64_t held_number(const struct held *h)
{
    return h->young ? h->young->number : h->found.block.number;
}

/* A block its owner freed: gone from the peak's count too (out of line,
 * as the sampled scaling is). */
COLD void peak_freed(struct heap_thread *t, uint64_t word)
{
    heap_peak_shrank(t, counted_bytes(BLOCK_WORD_SIZE(word)));
}

HOT void drop_young(struct heap_thread *t, struct block_slot *y)
{
    if (__builtin_expect(heap.peak_tracking, 0))
        peak_freed(t, y->word);
    forget(t, y->addr, y->word);
    __atomic_store_n(&y->addr, BLOCK_EMPTY, __ATOMIC_RELAXED);
}

static void drop_held(struct heap_thread *t, const struct held *h)
{
    if (h->young) {
        drop_young(t, h->young);
    } else {
        if (heap.peak_tracking)
            peak_freed(t, h->found.block.word);
        forget(t, h->found.block.addr, h->found.block.word);
        block_table_remove(&h->found);
    }
}

/* A custom allocator's block is keyed by its address with this bit set
 * (user addresses have 47 bits): never a malloc block's key. */
#define CUSTOM_BLOCK_TAG ((uintptr_t)1 << 62)

/* How a free is recorded, decided before the real free runs (see the top). */
struct free_plan {
    struct heap_thread *thread;
    bool held;          /* this thread holds a block at the address, */
    struct held where;  /* there: nothing moves it before finish_free (the real free records nothing) */
    bool numbered;      /* and the free takes a number */
    uint64_t number;
    size_t usable;      /* another thread's malloc block: its size, for the peak */
};

static bool plan_free(struct free_plan *f, void *p)
{
    if (!p || ((uintptr_t)p & BLOCK_GONE_BIT) || !maybe_recorded((uintptr_t)p) || !tracing() ||
        !(f->thread = this_thread()))
        return false;   /* an odd address is no block: the real free will say so */
    f->held = find_held(f->thread, (uintptr_t)p, &f->where);
    f->numbered = !f->held || held_number(&f->where) != read_number();
    if (f->numbered)
        f->number = take_number();
    /* Its owner's record says its size; the owner is another thread, so
     * the allocator's (a few bytes more) stands in. */
    f->usable = !f->held && heap.peak_tracking && !heap.sample_bytes && !((uintptr_t)p & CUSTOM_BLOCK_TAG)
                    ? malloc_usable_size(p) : 0;
    return true;
}

/* After the real free succeeded. */
static void finish_free(const struct free_plan *f, void *p)
{
    struct heap_thread *t = f->thread;
    if (f->held) {   /* freed now, or by another thread before: gone either way */
        drop_held(t, &f->where);
    }
    if (f->usable)
        heap_peak_shrank(t, f->usable);
    if (f->numbered) {
        uint64_t old;
        if (block_table_put(&t->freed, (uintptr_t)p, f->number, 0, &old) == BLOCK_PUT_NO_MEMORY)
            t->dropped++;
    }
}

void heap_note_custom_alloc(void *p, size_t size, void *site)
{
    if (!p || !reentry_enter())
        return;
    note_alloc((void *)((uintptr_t)p | CUSTOM_BLOCK_TAG), size, site);
    reentry_leave();
}

/* Recorded before the real free runs (a number is taken before, as for
 * free), and as done: a custom free does not fail. */
void heap_note_custom_free(void *p)
{
    if (!p || !reentry_enter())
        return;
    void *key = (void *)((uintptr_t)p | CUSTOM_BLOCK_TAG);
    struct free_plan f;
    if (plan_free(&f, key))
        finish_free(&f, key);
    reentry_leave();
}

#define DECLARE_NEXT(name, ret, params, args) static ret (*next_##name) params;
HEAP_HOOKS(DECLARE_NEXT)

/* Inside memprof (its own work, or a signal handler interrupting a hook):
 * call through without recording. */
#define PASS_THROUGH_IF_INSIDE(call) \
    if (!reentry_enter())            \
        return call;

/* Every block recorded; the hook's entry (return address, CFA, the caller's
 * %rbp) goes with it, for a backtrace (--frames, or a wrapper's caller). */
static __attribute__((noinline)) void *malloc_exact(size_t size, void *site, uintptr_t cfa, uintptr_t bp)
{
    PASS_THROUGH_IF_INSIDE(next_malloc(size));
    void *p = next_malloc(size);
    void *entry = site;
    struct heap_thread *t = recording_thread(p, size, &site);
    if (__builtin_expect(t != NULL, 1))
        record_alloc(t, p, size, site, (uintptr_t)entry, cfa, bp);
    reentry_leave();
    return p;
}

static __attribute__((noinline)) void *malloc_sampled(size_t size, void *site)
{
    PASS_THROUGH_IF_INSIDE(next_malloc(size));
    void *p = next_malloc(size);
    uintptr_t ret = (uintptr_t)site;   /* the call's own return address (site may become a wrapper's caller) */
    struct heap_thread *t = recording_thread(p, size, &site);
    if (t) {
        record_sampled(t, p, size, site);
        heap_sample_sites_offer(ret, SAMPLE_SITE_MALLOC);
    }
    reentry_leave();
    return p;
}

/* The peak's count of a block just recorded, last (a snapshot has this
 * block): a tail call, so that the record saves no register for it. */
COLD void *known_peak_grew(struct heap_thread *t, void *p, size_t size)
{
    heap_peak_grew(t, stored_size(size));
    reentry_leave();
    return p;
}

/* A block not recorded (inside memprof, or none), out of the way: GCC
 * would lay out this early return as the record's fall-through. */
static __attribute__((cold, noinline)) void *unrecorded(void *p)
{
    return p;
}

/* The record in the empty young slot `y`, and the hook's end; `origin_word`:
 * BLOCK_WORD(0, origin), `r`: the origin's record; `peak`: the peak is
 * tracked (a constant in the short hooks, chosen by mode). */
HOT void *record_known_in(struct heap_thread *t, struct block_slot *y, void *p, size_t size, uint64_t origin_word,
                          struct heap_origin *r, bool peak)
{
    store_young(y, (uintptr_t)p, read_number(), stored_size(size), origin_word, r, 1, stored_size(size));
    if (peak) {
        reentry_mark();   /* the peak's count may call out of memprof's code */
        return known_peak_grew(t, p, size);
    }
    return p;
}

/* The end of a record whose block filled the leaving ring (vacate): a
 * tail call, so that the record keeps no register across the table's work. */
COLD void *settled_leaving(struct heap_thread *t, void *p)
{
    settle_leaving(t);
    reentry_leave();
    return p;
}

/* record_known_vacating's rare cases: the slot's block at the same
 * address (its free was not seen), or the peak tracked. */
COLD void *record_known_replacing(struct heap_thread *t, struct block_slot *y, void *p, size_t size,
                                  uint64_t origin_word, struct heap_origin *r)
{
    bool full = vacate(t, y, (uintptr_t)p);
    store_young(y, (uintptr_t)p, read_number(), stored_size(size), origin_word, r, 1, stored_size(size));
    if (full)
        settle_leaving(t);
    if (heap.peak_tracking)
        return known_peak_grew(t, p, size);
    reentry_leave();
    return p;
}

/* The block in young slot `y` leaves through the ring; the block at `p`,
 * counted already (`word`: its size and origin), takes its place. */
COLD void *record_counted_leaving(struct heap_thread *t, struct block_slot *y, void *p, uint64_t word)
{
    bool full = leave_young(t, y);
    write_young(y, (uintptr_t)p, read_number(), word);
    if (__builtin_expect(full, 0))
        return settled_leaving(t, p);
    reentry_leave();
    return p;
}

/* The block in young slot `y` is in its logged array: the block at `p`,
 * counted already (`word`), takes the slot. */
HOT void *left_straight(struct block_slot *y, void *p, uint64_t word)
{
    empty_young(y);
    write_young(y, (uintptr_t)p, read_number(), word);
    reentry_leave();
    return p;
}

/* The end of a record that ends a window (grow_window_end). */
COLD void *window_ended(struct heap_thread *t, void *p)
{
    grow_window_end(t);
    reentry_leave();
    return p;
}

/* left_straight's, the last eviction of a window. */
COLD void *left_at_window_end(struct heap_thread *t, struct block_slot *y, void *p, uint64_t word)
{
    empty_young(y);
    write_young(y, (uintptr_t)p, read_number(), word);
    return window_ended(t, p);
}

/* record_direct's block whose region's logged array did not take it. */
COLD void *direct_put(struct heap_thread *t, void *p, uint64_t word)
{
    put_direct(t, (uintptr_t)p, read_number(), word);
    reentry_leave();
    return p;
}

/* The end of a record whose block took a logged array's next slot. */
HOT void *appended(struct heap_thread *t, void *p)
{
    if (grow_window_full(t, 1))
        return window_ended(t, p);
    reentry_leave();
    return p;
}

/* record_direct's block not in the cursor's region: its region's logged
 * array takes it in its next slot (its cursor's then), else the put the
 * long way. */
COLD void *direct_to_region(struct heap_thread *t, void *p, uint64_t word)
{
    const struct block_region *region = block_table_near_region(&t->blocks, (uintptr_t)p);
    if (__builtin_expect(!region, 0) ||
        !block_region_append_logged(&t->blocks, region, (uintptr_t)p, read_number(), word))
        return direct_put(t, p, word);
    return appended(t, p);
}

/* The block at `p` straight to the table (t->direct), counted first: the
 * next entry of the log the thread appended to last (a heap that grows
 * puts 64 KiB of blocks in each region in turn), else its region's. Every
 * call a tail call, as record_known_straight's. */
COLD void *record_direct(struct heap_thread *t, void *p, size_t size, uint64_t origin_word, struct heap_origin *r)
{
    uint64_t stored = stored_size(size);
    count_block(r, 1, stored);
    if (__builtin_expect(!block_table_append_next(&t->blocks, (uintptr_t)p, read_number(), stored | origin_word), 0))
        return direct_to_region(t, p, stored | origin_word);
    return appended(t, p);
}

/* The same with the peak tracked. */
COLD void *record_direct_peak(struct heap_thread *t, void *p, size_t size, uint64_t origin_word,
                              struct heap_origin *r)
{
    uint64_t stored = stored_size(size);
    count_block(r, 1, stored);
    put_direct(t, (uintptr_t)p, read_number(), stored | origin_word);
    return known_peak_grew(t, p, size);
}

/* record_known_straight's block whose region was not looked up lately:
 * found in the directory (none yet: through the ring, which adds it). */
COLD void *straight_to_found(struct heap_thread *t, struct block_slot *y, void *p, uint64_t word)
{
    const struct block_region *region = block_table_find_region(&t->blocks, block_region_key(y->addr));
    if (!region || !block_region_append_logged(&t->blocks, region, y->addr, y->number, y->word))
        return record_counted_leaving(t, y, p, word);
    return left_straight(y, p, word);
}

/* The block in young slot `y` leaves straight for its logged array when
 * the array takes it, else through the ring. Only while the ring is empty:
 * a block there may be an older one at the same address (freed unseen),
 * which would be put after this one and replace it. The new block is
 * counted first, and every call is a tail call, so that no value is held
 * across the table's work (no register saved). */
COLD void *record_known_straight(struct heap_thread *t, struct block_slot *y, void *p, size_t size,
                                 uint64_t origin_word, struct heap_origin *r)
{
    uint64_t stored = stored_size(size), word = stored | origin_word;
    count_block(r, 1, stored);
    const struct block_region *region = block_table_near_region(&t->blocks, y->addr);
    if (__builtin_expect(!region, 0))
        return straight_to_found(t, y, p, word);
    if (!block_region_append_logged(&t->blocks, region, y->addr, y->number, y->word))
        return record_counted_leaving(t, y, p, word);
    if (grow_window_full(t, 1))
        return left_at_window_end(t, y, p, word);
    return left_straight(y, p, word);
}

/* The young slot `y` of the block at `p` taken: its block leaves. */
COLD void *record_known_vacating(struct heap_thread *t, struct block_slot *y, void *p, size_t size,
                                 uint64_t origin_word, struct heap_origin *r)
{
    if (__builtin_expect(y->addr == (uintptr_t)p || heap.peak_tracking, 0))
        return record_known_replacing(t, y, p, size, origin_word, r);
    if (t->ring_empty)
        return record_known_straight(t, y, p, size, origin_word, r);
    count_block(r, 1, stored_size(size));
    return record_counted_leaving(t, y, p, stored_size(size) | origin_word);
}

/* The short path of an exact record (heap.short_paths): the origin known
 * before the call (the thread's last site again, or the stack its last walk
 * found), every block recorded, the reentry flag found clear by the caller.
 * No flag is set for the record itself: a signal handler that runs meanwhile
 * is behind hook/signal_guard.c's trampoline, which sets it for a pc in
 * memprof's code. The table's work, out of line, may call out of memprof's
 * code: the flag for it. The record tail-calls when the young slot is taken
 * or the peak tracked, so that it saves no register for those. */
HOT void *record_known_checked(struct heap_thread *t, void *p, size_t size, uint64_t origin_word,
                              struct heap_origin *r, bool peak)
{
    if (__builtin_expect(t->direct, 0)) {
        reentry_mark();
        return peak ? record_direct_peak(t, p, size, origin_word, r) : record_direct(t, p, size, origin_word, r);
    }
    struct block_slot *y = heap_young_slot(t, (uintptr_t)p);
    if (__builtin_expect(y->addr != BLOCK_EMPTY, 0)) {
        reentry_mark();
        return record_known_vacating(t, y, p, size, origin_word, r);
    }
    return record_known_in(t, y, p, size, origin_word, r, peak);
}

COLD void *record_known(struct heap_thread *t, void *p, size_t size, uint32_t origin)
{
    if (__builtin_expect(!p || ((uintptr_t)p & BLOCK_GONE_BIT), 0) || reentry_inside())
        return unrecorded(p);
    /* The record's place found now: a handler's hook may have moved the origins. */
    return record_known_checked(t, p, size, BLOCK_WORD(0, origin), &t->origins->records[origin],
                                heap.peak_tracking);
}

COLD void *malloc_known(struct heap_thread *t, size_t size, uint32_t origin)
{
    return record_known(t, next_malloc(size), size, origin);
}

/* A stack the thread's last walk found again, or the long way (a site the
 * thread's table holds was malloc_short's to find). */
COLD void *malloc_remembered(struct heap_thread *t, size_t size, void *site, uintptr_t cfa, uintptr_t bp)
{
    uint32_t origin = remembered_origin(t, (uintptr_t)site, cfa, bp);
    if (origin != UINT32_MAX)
        return malloc_known(t, size, origin);
    return malloc_exact(size, site, cfa, bp);
}

/* malloc's and free's entry points, one per mode (entries_of_mode, at the
 * end), so that none tests what its mode rules out: hook_malloc and
 * hook_free (the long paths) are installed, and the GOT slots are pointed
 * at the mode's. */

/* The thread's last site changed while the real malloc ran: a signal
 * handler allocated elsewhere meanwhile. The block's origin found again
 * from its own site, the long way (the reentry flag set). */
COLD void *record_site_again(struct heap_thread *t, void *p, size_t size, void *site)
{
    reentry_mark();
    record_alloc(t, p, size, site, 0, 0, 0);
    reentry_leave();
    return p;
}

/* After the real malloc, the block at `p` of the thread's last site
 * `site`: checked again, as a signal handler may have allocated elsewhere
 * during the call; from here on the signal guard keeps handlers' hooks
 * out. */
HOT void *record_at_last_site(void *p, size_t size, void *site, bool peak)
{
    if (__builtin_expect(!p || ((uintptr_t)p & BLOCK_GONE_BIT), 0))
        return unrecorded(p);
    bool inside;
    struct heap_thread *t = short_path_thread_inside(&inside);   /* its test used at once */
    if (__builtin_expect(inside, 0))
        return unrecorded(p);
    if (__builtin_expect(t->last_site != (uintptr_t)site, 0))
        return record_site_again(t, p, size, site);
    return record_known_checked(t, p, size, t->last_origin_word, t->last_record, peak);
}

/* The thread's last site's block (heap_remember_last_site said which). */
COLD void *malloc_last_site(size_t size)
{
    void *p = next_malloc(size);
    /* malloc_short's site: it tail-called this. */
    return record_at_last_site(p, size, __builtin_return_address(0), heap.peak_tracking);
}

/* Every block recorded, no Ruby line: the short path when the origin is
 * known before the call, else the long path, which inlines it all. With
 * one frame, a site the thread's table holds is made the last one first:
 * a program allocating from many sites in turn (a heap that grows) takes
 * one lookup more than the last site's path, not the stack's. */
static void *malloc_short(size_t size)
{
    uintptr_t bp = CPU_ENTRY_FP();   /* first: the caller's frame pointer */
    void *site = __builtin_return_address(0);
    uintptr_t cfa = CPU_ENTRY_CFA();
    struct heap_thread *t = heap_my_thread;
    if (__builtin_expect(t && !t->charge_site, 1)) {
        if ((heap.short_paths & SHORT_SITES) &&
            (t->last_site == (uintptr_t)site || heap_site_origin(t, (uintptr_t)site) != UINT32_MAX))
            return malloc_last_site(size);
        return malloc_remembered(t, size, site, cfa, bp);
    }
    return malloc_exact(size, site, cfa, bp);
}

/* One frame, every block recorded: the site of the thread's last allocation
 * again (never a C++ new's malloc: heap_charge_begin) is the common case, a
 * path with no taken jump but the calls (each costs about a cycle, where
 * the plain pair takes 38). */
HOT void *malloc_sites_with(size_t size, void *site, bool peak)
{
    struct heap_thread *t = short_path_thread_now();
    /* Not the last site: one the thread's table holds is made the last one
     * here, not in malloc_short (whose entry work the one frame does not
     * need); the mode checked again, as malloc_short does. */
    if (__builtin_expect(t->last_site != (uintptr_t)site, 0) &&
        !((heap.short_paths & SHORT_SITES) && !t->charge_site && heap_site_origin(t, (uintptr_t)site) != UINT32_MAX))
        return malloc_short(size);
    /* Only the size kept across the call (one saved register, and the
     * stack aligned without more): the thread, its last site (read again
     * from the stack) and its origin read again after it cost fewer
     * instructions than saving them. A signal handler that allocated
     * elsewhere during the call made another site the last. */
    void *p = next_malloc(size);
    return record_at_last_site(p, size, __builtin_return_address(0), peak);
}

static void *malloc_sites(size_t size)
{
    return malloc_sites_with(size, __builtin_return_address(0), false);
}

static void *malloc_sites_peak(size_t size)
{
    return malloc_sites_with(size, __builtin_return_address(0), true);
}

static void *hook_malloc(size_t size)
{
    uintptr_t bp = CPU_ENTRY_FP();
    return malloc_exact(size, __builtin_return_address(0), CPU_ENTRY_CFA(), bp);
}

/* Sampling: an allocation short of its thread's next sample point only
 * counts its bytes down and jumps to the real malloc: no thread record, no
 * flag. Anything else (a sample point, a thread's first call, a C++ new's
 * charge: sample_left 0) takes the body, which decides from the count. */
static void *malloc_sampling(size_t size)
{
    /* One subtraction in place, its borrow or zero meaning left <= size (GCC
     * loaded, compared and stored). The count is an input with "memory", as
     * the kernel's RMWcc: as an asm goto output, GCC 12 dropped the label's code. */
#if defined(__x86_64__)
    __asm__ goto("subq %1, %0\n\tjbe %l[at_point]" : : "m"(sample_left), "r"(size) : "cc", "memory" : at_point);
#else
    uint64_t left = (uint64_t)sample_left;
    sample_left = (int64_t)(left - size);
    if (left <= size)
        goto at_point;
#endif
    return next_malloc(size);
at_point:
    sample_left += (int64_t)size;   /* the body counts this allocation itself */
    return malloc_sampled(size, __builtin_return_address(0));
}

static void *hook_calloc(size_t n, size_t size)
{
    PASS_THROUGH_IF_INSIDE(next_calloc(n, size));
    void *p = next_calloc(n, size);
    note_alloc(p, n * size, __builtin_return_address(0));
    reentry_leave();
    return p;
}

static void *hook_realloc(void *old, size_t size)
{
    PASS_THROUGH_IF_INSIDE(next_realloc(old, size));
    struct free_plan f;
    bool planned = plan_free(&f, old);
    void *p = next_realloc(old, size);
    /* realloc(p, 0) frees p (glibc returns NULL); a NULL for a size means
     * failure, and p is untouched. */
    if (planned && (p || size == 0))
        finish_free(&f, old);
    note_alloc(p, size, __builtin_return_address(0));
    reentry_leave();
    return p;
}

static void *hook_reallocarray(void *old, size_t n, size_t size)
{
    PASS_THROUGH_IF_INSIDE(next_reallocarray(old, n, size));
    struct free_plan f;
    bool planned = plan_free(&f, old);
    void *p = next_reallocarray(old, n, size);
    if (planned && p)
        finish_free(&f, old);
    note_alloc(p, n * size, __builtin_return_address(0));
    reentry_leave();
    return p;
}

/* The young slot of a block `t` (never NULL: short_path_thread) holds at
 * `p` whose free needs no number (none was taken since its allocation: see
 * heap_thread.h), or NULL. */
HOT struct block_slot *young_unnumbered_short(struct heap_thread *t, void *p)
{
    struct block_slot *y = heap_young_slot(t, (uintptr_t)p);
    __asm__("" : "+r"(y));   /* one address: GCC derived another for the slot's store */
    return p && y->addr == (uintptr_t)p && number_is_current(y->number) ? y : NULL;
}

/* The same for heap_my_thread (NULL until the thread has a record). */
HOT struct block_slot *young_unnumbered(struct heap_thread *t, void *p)
{
    return t ? young_unnumbered_short(t, p) : NULL;
}

/* A free that is not the common case: an older block, another thread's,
 * or a number taken since the allocation. */
COLD void free_planned(void *p)
{
    struct free_plan f;
    bool planned = plan_free(&f, p);
    next_free(p);
    if (planned)
        finish_free(&f, p);
}

/* A free of a block that may be recorded. The common case first: a young
 * block of this thread's, no number taken since it was allocated. */
HOT void free_recorded(void *p)
{
    struct heap_thread *t = heap_my_thread;
    struct block_slot *y;
    if ((y = young_unnumbered(t, p)) && tracing()) {
        drop_young(t, y);
        next_free(p);
    } else {
        free_planned(p);
    }
}

static __attribute__((noinline)) void free_noted(void *p)
{
    PASS_THROUGH_IF_INSIDE(next_free(p));
    free_recorded(p);
    reentry_leave();
}

/* A young block's record gone, with sampling off. */
HOT void drop_young_exact(struct heap_thread *t, struct block_slot *y)
{
    forget_exact(t, y->word);
    __atomic_store_n(&y->addr, BLOCK_EMPTY, __ATOMIC_RELAXED);
}

/* The short path with the peak tracked, apart: the hook saves no register. */
COLD void free_young_peak(struct heap_thread *t, struct block_slot *y, void *p)
{
    peak_freed(t, y->word);
    drop_young_exact(t, y);
    reentry_leave();
    next_free(p);
}

/* free's long path reached from the short one, out of the way (GCC would
 * lay out the jump to it as the short path's fall-through). */
static __attribute__((cold, noinline)) void free_elsewhere(void *p)
{
    free_noted(p);
}

/* Every block recorded: a young block of this thread's, no number taken
 * since its allocation, dropped here before a jump to the real free. */
HOT void free_short_with(void *p, bool peak)
{
    struct heap_thread *t = short_path_thread;
    /* No flag set: from the slot's check to its drop the signal guard keeps
     * a handler's hooks from putting another block there. */
    struct block_slot *y = young_unnumbered_short(t, p);
    if (__builtin_expect(!y, 0) || __builtin_expect(reentry_inside(), 0))
        return free_elsewhere(p);
    if (peak) {
        reentry_mark();
        return free_young_peak(t, y, p);
    }
    drop_young_exact(t, y);
    next_free(p);
}

static void free_short(void *p)
{
    free_short_with(p, false);
}

static void free_short_peak(void *p)
{
    free_short_with(p, true);
}

/* A free whose filter byte is not 0 (the block may be recorded), reached
 * by a jump from free_sampling or a stub: its return address is the free's
 * caller, whose call site is offered a stub. */
static void free_filtered(void *p)
{
    free_noted(p);
    if (reentry_enter()) {
        heap_sample_sites_offer((uintptr_t)__builtin_return_address(0), SAMPLE_SITE_FREE);
        reentry_leave();
    }
}

/* Sampling: most frees are of blocks never recorded, whose filter byte is
 * 0. The byte picks the jump from heap.sampled_free_targets, the table the
 * stubs at sampled call sites jump through (heap_sample_sites.c). */
static void free_sampling(void *p)
{
    uint8_t byte = __atomic_load_n(filter_entry((uintptr_t)p), __ATOMIC_RELAXED);
    ((void (*)(void *))heap.sampled_free_targets[byte])(p);
}

static void hook_free(void *p)
{
    free_noted(p);
}

static int hook_posix_memalign(void **out, size_t align, size_t size)
{
    PASS_THROUGH_IF_INSIDE(next_posix_memalign(out, align, size));
    int rc = next_posix_memalign(out, align, size);
    if (rc == 0)
        note_alloc(*out, size, __builtin_return_address(0));
    reentry_leave();
    return rc;
}

#define SIMPLE_ALIGNED_HOOK(name, params, call)            \
    static void *hook_##name params                        \
    {                                                      \
        PASS_THROUGH_IF_INSIDE(next_##name call);          \
        void *p = next_##name call;                        \
        note_alloc(p, size, __builtin_return_address(0));  \
        reentry_leave();                                   \
        return p;                                          \
    }
SIMPLE_ALIGNED_HOOK(aligned_alloc, (size_t align, size_t size), (align, size))
SIMPLE_ALIGNED_HOOK(memalign, (size_t align, size_t size), (align, size))
SIMPLE_ALIGNED_HOOK(valloc, (size_t size), (size))
SIMPLE_ALIGNED_HOOK(pvalloc, (size_t size), (size))

/* Each hook has the hooked function's own type: a mismatch fails to compile. */
#define CHECK_TYPE(name, ret, params, args) \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&hook_##name), __typeof__(&name)), #name);
HEAP_HOOKS(CHECK_TYPE)

#define HOOK_ENTRY(name, ret, params, args) \
    { .symbol = #name, .replacement = (void *)hook_##name, .next = (void **)&next_##name },
static struct got_hook hooks[] = { HEAP_HOOKS(HOOK_ENTRY) };
#define HOOK_COUNT (sizeof hooks / sizeof hooks[0])

static struct got_hook *hook_named(const char *symbol)
{
    for (size_t i = 0; i < HOOK_COUNT; i++)
        if (strcmp(hooks[i].symbol, symbol) == 0)
            return &hooks[i];
    return NULL;
}

/* --- which entry points each mode installs ------------------------------------ */

/* Naming: hook_NAME is NAME's long path, correct in every mode (the one
 * got_hooks_install puts in the GOT); malloc_MODE and free_MODE are the
 * entry points only the table below installs; *_with are their forced-inline
 * bodies, a mode's constants as parameters; record_* and the others are the
 * work they share. */
enum heap_mode {
    HEAP_MODE_STOPPED,      /* not recording: the long paths, which check */
    HEAP_MODE_SAMPLED,      /* a block per sample point (MEMPROF_SAMPLE_BYTES) */
    HEAP_MODE_RUBY_LINES,   /* every block, with its Ruby line: malloc asks the VM */
    HEAP_MODE_STACKS,       /* every block, more than one frame (or wrappers) */
    HEAP_MODE_SITES,        /* every block, its call site alone */
    HEAP_MODES
};

struct mode_entries {
    void *malloc, *free;             /* the peak not tracked */
    void *malloc_peak, *free_peak;   /* the peak tracked (MEMPROF_PEAK) */
    unsigned short_paths;            /* heap.short_paths: what the entries may assume */
};

static const struct mode_entries entries_of_mode[HEAP_MODES] = {
    [HEAP_MODE_STOPPED] = { hook_malloc, hook_free, hook_malloc, hook_free, 0 },
    [HEAP_MODE_SAMPLED] = { malloc_sampling, free_sampling, malloc_sampling, free_sampling, 0 },
    [HEAP_MODE_RUBY_LINES] = { hook_malloc, free_short, hook_malloc, free_short_peak, SHORT_FREE },
    [HEAP_MODE_STACKS] = { malloc_short, free_short, malloc_short, free_short_peak, SHORT_FREE | SHORT_MALLOC },
    [HEAP_MODE_SITES] = { malloc_sites, free_short, malloc_sites_peak, free_short_peak,
                          SHORT_FREE | SHORT_MALLOC | SHORT_SITES },
};

static enum heap_mode mode_now(void)
{
    if (!__atomic_load_n(&heap.running, __ATOMIC_ACQUIRE))
        return HEAP_MODE_STOPPED;
    if (heap.sample_bytes)
        return HEAP_MODE_SAMPLED;
    if (heap_ruby_enabled())
        return HEAP_MODE_RUBY_LINES;
    return heap.frames == 1 ? HEAP_MODE_SITES : HEAP_MODE_STACKS;
}

/* MEMPROF_SAMPLE_STUBS=no: sampled call sites keep their PLT calls. */
static bool sample_sites_wanted(void)
{
    const char *v = env_get("MEMPROF_SAMPLE_STUBS");
    return !v || (strcmp(v, "no") != 0 && strcmp(v, "0") != 0);
}

/* malloc's and free's entry points for the mode of the moment. A call
 * already in the entry of the mode before finishes there: each entry checks
 * again, on its slower paths, what it assumed. */
void heap_short_paths_refresh(void)
{
    static pthread_mutex_t choosing = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&choosing);
    /* Call sites pointed at sampling's stubs go back to their PLT entries
     * first: the stubs would keep sampling's fast path past a new hook. */
    heap_sample_sites_restore();
    enum heap_mode mode = mode_now();
    const struct mode_entries *m = &entries_of_mode[mode];
    bool peak = __atomic_load_n(&heap.peak_tracking, __ATOMIC_ACQUIRE);
    __atomic_store_n(&heap.short_paths, m->short_paths, __ATOMIC_RELEASE);
    struct got_hook *const chosen[] = { hook_named("malloc"), hook_named("free") };
    void *const entries[] = { peak ? m->malloc_peak : m->malloc, peak ? m->free_peak : m->free };
    if (mode == HEAP_MODE_SAMPLED)   /* free_sampling's jumps, before it can be reached */
        for (size_t i = 0; i < SAMPLED_FREE_TARGETS; i++)
            __atomic_store_n(&heap.sampled_free_targets[i], i ? (uintptr_t)free_filtered : (uintptr_t)next_free,
                             __ATOMIC_RELAXED);
    if (got_hooks_retarget(chosen, entries, 2) == 0 && mode == HEAP_MODE_SAMPLED && sample_sites_wanted())
        heap_sample_sites_enable(&(struct sample_stub_targets){
            .count_offset = (int32_t)((char *)&sample_left - (char *)__builtin_thread_pointer()),
            .filter = heap.sampled_filter,
            .free_targets = heap.sampled_free_targets,
            .next_malloc = (uintptr_t)next_malloc,
            .malloc_hook = (uintptr_t)malloc_sampling,
            .free_hook = (uintptr_t)free_sampling,
        });
    pthread_mutex_unlock(&choosing);
}

/* The signal guard with them: the short paths set no reentry flag. */
int heap_hooks_install(void)
{
    if (got_hooks_install(hooks, HOOK_COUNT) != 0)
        return -1;
    if (signal_guard_install() != 0) {
        got_hooks_remove(hooks, HOOK_COUNT);
        return -1;
    }
    return 0;
}

void heap_hooks_remove(void)
{
    got_hooks_remove(hooks, HOOK_COUNT);
    signal_guard_remove();
}
