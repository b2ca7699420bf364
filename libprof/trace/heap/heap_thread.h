/* The C heap tracer's per-thread state: written by its thread's hooks only
 * (heap_hooks.c), read at the same time by a report in any thread (heap_report.c)
 * through store/readers.h. No lock is shared by two hooks.
 *
 * Each thread keeps the blocks it allocated, keyed by address, with the
 * value of the free counter read after the allocation returned: the newest
 * in a small direct-mapped table that stays in the cache (most blocks are
 * freed young, by the thread that made them), older ones, pushed out of
 * their young slot by a newer block, in a table that grows; a thread
 * that frees a block it does not hold takes a number from that counter
 * before the real free and keeps it in its `freed` table. Ordered by
 * (number, allocation before free), the last event at an address says
 * whether a block lives there: see heap_report.c. */
#ifndef MEMPROF_TRACE_HEAP_THREAD_H
#define MEMPROF_TRACE_HEAP_THREAD_H
#include "heap_ruby.h"
#include "../../unwind/backtrace.h"
#include "../../store/block_table.h"
#include "../../store/readers.h"
#include "../../util/spinlock.h"
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define HEAP_MAX_FRAMES 16

/* A block's word (BLOCK_WORD: its size and origin) is store/block_table.h's. */

/* An origin: a call site with the allocating thread and the rest of the
 * stack (a leaf), or one caller of a chain. Leaves have the thread serial
 * in the key's top 16 bits (user addresses fit in 47 bits); chain links
 * have a plain pc there. */
#define THREAD_SHIFT 48
#define MAX_THREAD_SERIAL 0xffffu    /* later threads share the last number */
#define ORIGIN_SITE(k) ((uintptr_t)((k) & ((UINT64_C(1) << THREAD_SHIFT) - 1)))
#define ORIGIN_THREAD(k) ((uint32_t)((k) >> THREAD_SHIFT))
/* link: the caller chain's origin id + 1 (0: none), the Ruby line above. */
#define ORIGIN_CALLER(link) ((uint32_t)(link))
#define ORIGIN_RUBY_LINE(link) ((uint32_t)((link) >> 32))

#define CACHE_LINE 64
/* 64 bytes, one cache line: the record of a block's origin is found from
 * the origin's id shifted (a free's one computation), and an allocation's
 * updates touch one line. What lives is what was made less what went
 * (heap_origin_live): an allocation writes the made figures and the peak,
 * a free the gone ones, two writes fewer a pair than live figures kept
 * apart from the made ones. */
struct heap_origin {
    uint64_t key, link;
    uint64_t total_count, total_bytes; /* made (bytes scaled with sampling) */
    uint64_t freed_bytes, peak_bytes;  /* gone of those; the most live at once, as the owner saw (see the
                                          report) */
    uint64_t alone;                    /* the owner's: the wrappers' generation + 1 in which the origin
                                          was its site alone (heap_site_origin); 0: never */
    uint64_t freed_count;              /* as freed_bytes; not kept with sampling (a block's weight is
                                          drawn at random when it is made) */
} __attribute__((aligned(CACHE_LINE)));
_Static_assert(sizeof(struct heap_origin) == CACHE_LINE, "an origin's record is one cache line");

/* An origin's live blocks and bytes, made less gone, for any thread: the
 * gone read first, so that a reader never takes more gone than made from
 * its owner's writes in order; 0, not less, from a weaker order's. */
struct heap_live {
    uint64_t count, bytes;
};

static inline struct heap_live heap_origin_live(const struct heap_origin *r)
{
    uint64_t freed_count = __atomic_load_n(&r->freed_count, __ATOMIC_ACQUIRE);
    uint64_t freed_bytes = __atomic_load_n(&r->freed_bytes, __ATOMIC_ACQUIRE);
    uint64_t count = __atomic_load_n(&r->total_count, __ATOMIC_RELAXED);
    uint64_t bytes = __atomic_load_n(&r->total_bytes, __ATOMIC_RELAXED);
    return (struct heap_live){ count > freed_count ? count - freed_count : 0,
                               bytes > freed_bytes ? bytes - freed_bytes : 0 };
}

struct origin_array {
    size_t capacity;
    struct heap_origin records[];
};

#define YOUNG_BITS 12
#define YOUNG_SLOTS (1u << YOUNG_BITS)
/* The young slots and, after them, a ring of blocks leaving for the older
 * table (heap_hooks.c, vacate), in two halves: each there for LEAVING_HALF
 * evictions or more while its table slot is fetched into the cache, then
 * put in the table with the rest of its half. Every slot a reader scans as
 * young. */
#define LEAVING_SLOTS 8
#define LEAVING_HALF (LEAVING_SLOTS / 2)
#define YOUNG_HELD (YOUNG_SLOTS + LEAVING_SLOTS)
#define CALLER_CACHE 64

struct caller_cache_entry {
    uint32_t count, link;              /* link: chain id + 1 */
    uintptr_t pcs[HEAP_MAX_FRAMES - 1];
};

/* Sites whose origin is the site alone (one frame, not in a wrapper, no
 * Ruby line), direct-mapped by address to the origin's id + 1: a program
 * allocating from thousands of sites in turn finds each one's origin in
 * two loads, not through the wrappers' table and the interning
 * (heap_origins.c). The origin's record says whether it is the site's (its
 * key, its `alone`): the record is the line the allocation counts in, and
 * the ids, four bytes each, take a quarter of the cache the sites with
 * their generations did. */
#define SITE_ORIGIN_BITS 13

struct heap_memo {
    uintptr_t site;
    uint64_t generation;               /* the wrappers' tables it was found with */
    int frames;
    uint32_t origin;
    bool valid;
};

/* Who the thread of a serial was. A record outlives its thread (the blocks
 * it holds do) and is taken by a thread started after that one ended
 * (heap_records.c), which gets a serial of its own: a report
 * names each serial's thread from here, not from the record. */
struct heap_identity {
    pid_t tid;
    bool exited;
    char name[16];                     /* as the record's `name` */
};

struct heap_thread {
    struct heap_thread *next;          /* push-only list */
    uint32_t serial;                   /* from 1: the thread's now (its origins may have older ones) */
    pid_t tid;
    bool exited;
    char name[16];                     /* its name when it first allocated, then when it exited */
    struct block_slot young[YOUNG_HELD];    /* newest blocks, word: BLOCK_WORD */
    unsigned leaving_next;             /* the owner's: the leaving slot to settle and fill next */
    bool ring_empty;                   /* the owner's: no leaving slot holds a block (a leaving block may
                                          skip the ring: none there to pass) */
    struct block_table blocks;         /* older ones, packed; a block is in one of them */
    struct block_table blocks_spill;   /* the older ones that do not pack (blocks.spill) */
    struct block_table freed;          /* blocks it freed but did not hold */
    struct origin_array *origins;      /* published */
    /* The owner's alone, beside origins: every short path reads the three,
     * one cache line. */
    uintptr_t last_site;               /* the site of last_key */
    uint64_t last_origin_word;         /* its origin, as in a block's word: BLOCK_WORD(0, origin) */
    struct heap_origin *last_record;   /* that origin's record, in origins (moved when it grows) */
    /* The owner's: a heap that only grows (heap_hooks.c, record_direct). */
    bool direct;                       /* new blocks go straight to `blocks`; the young slots and the ring
                                          are empty */
    uint32_t grow_puts;                /* blocks put in `blocks` in this window: evictions, or direct puts */
    uint64_t grow_frees;               /* blocks it held gone (freed, or found freed unseen) since then */
    uint64_t grown_direct;             /* blocks put direct in the windows before this one (published) */
    size_t origin_count;               /* published after the record is whole */
    struct retired origins_retired;
    /* The owner's alone: */
    uint64_t last_key;                 /* the last origin with no link */
    uint64_t last_link_key, last_link; /* the last origin with a link (a loop */
    uint32_t last_link_origin;         /* allocates with the same stack) */
    uint32_t *origin_index;            /* open-addressed (id + 1) */
    size_t origin_index_capacity;
    struct caller_cache_entry *callers;   /* [CALLER_CACHE], with backtraces */
    struct unwind_cache *unwind;       /* the frames' rules, with backtraces */
    /* malloc's hook entry, where a backtrace starts (entry_pc 0: from the
     * unwinder itself): its return address, its CFA and %rbp there. */
    uintptr_t entry_pc, entry_cfa, entry_bp;
    /* The origins of the last walks from entries, by the unwinder's memo
     * slot (unwind->memos): the same site, the same frames, the same
     * origin. */
    struct heap_memo memos[UNWIND_MEMOS];
    uint32_t *site_origins;            /* [1 << SITE_ORIGIN_BITS], made at the first site not the last */
    uint64_t stacks_walked;            /* allocations whose stack was walked, */
    uint64_t stacks_remembered;        /* and those a memo answered (the owner's counts) */
    uintptr_t wrapped_site;            /* the last site asked of the wrappers' table, */
    uint64_t wrapped_generation;       /* of which table, */
    bool site_is_wrapped;              /* and its answer */
    unsigned long dropped;             /* allocations not recorded: no memory */
    void *charge_site;                 /* heap_charge_begin: whose next allocation */
    size_t charge_min, charge_max;
    int64_t charge_sample_left;        /* the thread's sample_left while a charge waits */
    uint64_t sample_state;             /* the sample points' random generator */
    int64_t peak_delta;                /* live bytes not yet passed on (heap_peak.h) */
    struct heap_ruby_cache ruby_lines;
    /* Its thread ended (heap_record_give_up): a thread started later may
     * take the record once the kernel says that one is gone. */
    bool vacant;
    size_t origins_from;               /* its thread's first origin: those before are of threads that held
                                          the record earlier (the thread's totals start here) */
};

/* 32 KiB of one-byte counts: every free reads one, so the table must stay
 * in the nearest caches (2^18 four-byte counts, 1 MiB, cost each free a
 * miss). A count that reaches 255 stays there: only more frees look further. */
#define SAMPLED_FILTER_BITS 15
#define SAMPLED_FILTER_STUCK 255
#define SAMPLED_FREE_TARGETS 256   /* one per value of a filter byte */
/* Where an address falls in the filter (and in the young slots): its
 * 16-byte granule, modulo the table. Not a hash: the blocks an allocator
 * hands out again and again sit close together, and so do their entries,
 * which then stay in the nearest cache (a hash sent every free to a line
 * of its own: a miss on most). The hooks and the stubs at sampled call
 * sites (heap_sample_sites.c) compute the same. */
#define ADDRESS_GRANULE_SHIFT 4
#define SAMPLED_FILTER_INDEX(p) (((uint32_t)(p) >> ADDRESS_GRANULE_SHIFT) & ((1u << SAMPLED_FILTER_BITS) - 1))

struct heap_state {
    bool running;
    bool peak_tracking;                /* the hooks count live bytes (heap_peak.h) */
    uint8_t short_paths;               /* SHORT_*: which hooks may take their short path */
    int frames;                        /* frames recorded per site (MEMPROF_HEAP_FRAMES) */
    struct heap_thread *threads;       /* newest first */
    uint32_t thread_count;             /* serial numbers handed out */
    struct heap_identity *identities;  /* [MAX_THREAD_SERIAL + 1] by serial, mapped at the first record */
    pthread_key_t exit_key;            /* its destructor marks a thread exited */
    bool exit_key_made;
    uint64_t sample_bytes;             /* mean bytes between samples; 0: every block */
    uint64_t sample_seed;              /* MEMPROF_SAMPLE_SEED, else from the clock */
    /* How many recorded blocks hash to each entry, with sampling: a free
     * whose entry is 0 is of no recorded block and costs nothing more. */
    uint8_t *sampled_filter;
    /* Where a sampled free goes by its filter byte: entry 0 the real free,
     * any other the hook's lookup. After the filter, in the same mapping:
     * below 2 GiB when there was room (the stubs need it there). */
    uintptr_t *sampled_free_targets;
    _Alignas(CACHE_LINE) uint64_t next_number;   /* the next unheld free's number */
    _Alignas(CACHE_LINE) spinlock_t report_lock;
};

/* Hidden in the declaration too: GCC then addresses it from %rip in every
 * file, as it does a definition of its own (the hooks do not load its
 * address first). */
extern struct heap_state heap __attribute__((visibility("hidden")));

#define SHORT_FREE 1u     /* recording every block */
#define SHORT_MALLOC 2u   /* and no Ruby line: an origin known before the call */
#define SHORT_SITES 4u    /* and one frame: the thread's last site's */
/* After any of those changes. */
void heap_short_paths_refresh(void);

size_t heap_thread_bytes(const struct heap_thread *t);

/* The young slot of a block at `p`: by granule, as the sampled filter's
 * entry (heap_hooks.c), so that a block freed and handed out again finds
 * the slot its last owner left in the cache. Blocks 64 KiB apart share one
 * (the older of two goes to the older table). */
static inline struct block_slot *heap_young_slot(struct heap_thread *t, uintptr_t p)
{
    /* The granule's bits in place, times 3/2: a slot (24 bytes) is one and a
     * half granules, one instruction fewer than the index times 24. */
    _Static_assert(sizeof(struct block_slot) * 2 == (3u << ADDRESS_GRANULE_SHIFT), "a slot is 1.5 granules");
    uint32_t granule_bits = (uint32_t)p & ((YOUNG_SLOTS - 1) << ADDRESS_GRANULE_SHIFT);
    return (struct block_slot *)((char *)t->young + (granule_bits * 3 >> 1));
}

/* A thread's record through its life (heap_records.c). The calling
 * thread's: one a thread that ended gave up, with the blocks it holds,
 * else a new one; with a serial of its own; NULL when out of memory. */
struct heap_thread *heap_record_take(void);
/* A thread's exit (its pthread key's destructor): named, and given up. */
void heap_record_give_up(void *record);
/* In the child of a fork: the other threads' records kept, never taken. */
void heap_records_after_fork(void);
/* Who held `serial`; NULL when that is not known. */
const struct heap_identity *heap_identity_of(uint32_t serial);
/* The bytes of the identities handed out so far. */
size_t heap_identities_bytes(void);
/* The serials handed out so far (the last shared past MAX_THREAD_SERIAL). */
uint32_t heap_serials(void);

/* The owner's running figures (an origin's, its walk counts): plain
 * read-modify-writes, as only the owner writes them; a report reads them
 * whole (aligned words), with no lock. */
static inline void owner_add(uint64_t *field, uint64_t v)
{
    cpu_word_add(field, v);
}

/* The owner's peak raised to `live` if below (live mostly grows past it). */
static inline void owner_raise(uint64_t *peak, uint64_t live)
{
    cpu_word_raise(peak, live);
}

/* The same, taken off (a free's live bytes). */
static inline void owner_sub(uint64_t *field, uint64_t v)
{
    cpu_word_sub(field, v);
}
#endif
