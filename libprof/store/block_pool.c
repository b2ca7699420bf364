/* A block table's arrays: a few sizes, each half as large again as the one
 * before (a region's array grows through them). Arrays of one size are cut
 * from slabs of 128 KiB; an array given back waits until no report can be
 * reading it (readers.h), then goes back to its slab, and a slab with none
 * left handed out takes any size next, its pages kept (keep_written) or
 * given back to the kernel. So a heap that grows region by region fills its
 * new regions with the arrays the older ones grew out of, and regions that
 * grow side by side leave no more than a partly used slab of each size
 * behind. Arrays larger than half a slab are mapped alone: each mapping
 * takes the memory map's lock from the program's threads (two threads
 * keeping 1M blocks of 24 bytes each mapped 1060 arrays alone at a quarter,
 * 79 at half).
 *
 * A reader in another process (memprof top) cannot be waited for: it checks
 * each array's stamp instead (block_table.h), which changes when the array
 * is given back, unmapped or handed out again. So an array replaced leaves
 * the tables' generation (util/pages.h) alone: a heap under load replaces
 * dozens a second, and a reader of the whole tables would never finish a
 * read between two of them. */
#include "block_table.h"
#include "../util/pages.h"
#include <string.h>
#include <sys/mman.h>

static uint64_t stamps;   /* every pool's: a stamp is never handed out twice */

#define MIN_CAPACITY 8
#define SLAB_BYTES ((size_t)128 << 10)
#define SLAB_ARRAY_MAX (SLAB_BYTES / 2)
#define CHUNK_BYTES ((size_t)4 << 20)   /* slabs are cut from chunks: one mmap for 32 */
#define ALIGN 64                         /* a cache line: a probe of four packed slots reads one */
#define PAGE ((size_t)4096)
/* A new slab's pages mapped at once from this size of pool on (one call
 * instead of a fault a page): a small table touches only what it uses. */
#define POPULATE_FROM ((size_t)2 << 20)

/* At the start of its 128 KiB: the slab's first ALIGN bytes. */
struct slab {
    struct slab *prev, *next;        /* in its size's list of slabs with room, or the empty list */
    struct block_array *free;        /* arrays given back here, linked by `next` */
    char *unused;                    /* arrays never cut start here */
    uint32_t size_class, arrays;     /* arrays handed out now */
    bool listed;                     /* in its size's list */
    bool written;                    /* its arrays never cut are not zero (it was emptied unpurged) */
    uint32_t touched;                /* bytes from its start counted as the pool's: the pages written */
};

size_t block_pool_capacity(unsigned size_class)
{
    size_t capacity = MIN_CAPACITY;
    while (size_class--)
        capacity += capacity / 2;
    return capacity;
}

static size_t array_bytes(unsigned size_class, bool packed)
{
    size_t bytes = sizeof(struct block_array) + block_pool_capacity(size_class) * block_words(packed) * sizeof(uint64_t);
    if (packed && size_class >= BLOCK_LOGGED_CLASS)
        bytes += BLOCK_GRANULES / 8;   /* a logged array's bitmap, after the slots */
    return (bytes + ALIGN - 1) & ~(size_t)(ALIGN - 1);
}

static struct slab *slab_of(const struct block_array *a)
{
    return (struct slab *)((uintptr_t)a & ~(uintptr_t)(SLAB_BYTES - 1));
}

static void link_slab(struct slab **list, struct slab *s)
{
    s->prev = NULL;
    s->next = *list;
    if (*list)
        (*list)->prev = s;
    *list = s;
}

static void unlink_slab(struct slab **list, struct slab *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        *list = s->next;
    if (s->next)
        s->next->prev = s->prev;
}

/* A chunk of slabs, mapped larger and trimmed. From the second on, in huge
 * pages and aligned to them, so that both its halves can be one (a table
 * probed at random then misses the TLB less), unless huge pages proved slow
 * here (util/pages.h); the first, a small table's, keeps 4 KiB pages,
 * aligned to a slab. */
static bool map_chunk(struct block_pool *p)
{
    bool later = p->chunk_end != NULL, huge = later && !pages_huge_refused();
    size_t align = later ? PAGES_HUGE_BYTES : SLAB_BYTES, span = CHUNK_BYTES + align;
    char *raw = huge ? pages_alloc_huge(span) : pages_alloc(span);
    if (!raw)
        return false;
    char *start = (char *)(((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1));
    if (start > raw)
        pages_free(raw, (size_t)(start - raw));
    if (raw + span > start + CHUNK_BYTES)
        pages_free(start + CHUNK_BYTES, (size_t)(raw + span - (start + CHUNK_BYTES)));
    p->chunk = start;
    p->chunk_end = start + CHUNK_BYTES;
    p->chunk_huge = huge;
    return true;
}

/* The slab's first `end` bytes counted as written. */
static void touch(struct block_pool *p, struct slab *s, size_t end)
{
    end = (end + PAGE - 1) & ~(PAGE - 1);
    if (end > s->touched) {
        p->bytes += end - s->touched;
        s->touched = (uint32_t)end;
    }
}

/* The pages of a slab's new array from its `touched` bytes to `end`,
 * mapped written before any probe reads them: a first read maps the zero
 * page, and the write after it faults again and, in a process whose threads
 * run on other CPUs, interrupts each of them to flush its TLB. In one call
 * (a fault costs 12 us a page under the hypervisor here, a page populated
 * under 1: bench/fresh-pages); else a write a page. Past `touched` nothing
 * is handed out, so the zero written is what the page holds. */
static void write_pages(struct slab *s, size_t end)
{
    if (end <= s->touched || pages_fill((char *)s + s->touched, end - s->touched))
        return;
    for (size_t at = s->touched; at < end; at += PAGE)
        ((volatile char *)s)[at] = 0;
}

/* A slab for arrays of `size_class`: an empty one, or one not used yet. */
static struct slab *new_slab(struct block_pool *p, unsigned size_class)
{
    struct slab *s = p->empty;
    bool written = false;
    uint32_t touched = 0;
    if (s) {
        unlink_slab(&p->empty, s);
        if ((written = s->written)) {
            touched = s->touched;
            p->empty_written -= touched;
        }
    } else {
        if (p->chunk == p->chunk_end && !map_chunk(p))
            return NULL;
        s = (struct slab *)p->chunk;
        p->chunk += SLAB_BYTES;
        /* A probe's first read of a page would map the zero page, and its
         * first write fault again. */
        enum pages_kind kind = !p->chunk_huge ? PAGES_SMALL
                               : (uintptr_t)s % PAGES_HUGE_BYTES == 0 ? PAGES_HUGE_FIRST : PAGES_HUGE_REST;
        if (p->bytes >= POPULATE_FROM && pages_populate(s, SLAB_BYTES, kind)) {
            p->bytes += SLAB_BYTES;
            touched = SLAB_BYTES;
        }
    }
    *s = (struct slab){ .unused = (char *)s + ALIGN, .size_class = size_class, .listed = true, .written = written,
                        .touched = touched };
    touch(p, s, ALIGN);
    link_slab(&p->room[size_class], s);
    return s;
}

static bool slab_has_room(const struct slab *s, size_t bytes)
{
    return s->free || (size_t)((const char *)s + SLAB_BYTES - s->unused) >= bytes;
}

struct block_array *block_pool_take(struct block_pool *p, unsigned size_class, bool packed)
{
    if (size_class >= BLOCK_POOL_CLASSES)
        return NULL;
    p->packed = packed;
    size_t bytes = array_bytes(size_class, packed);
    struct block_array *a;
    if (bytes > SLAB_ARRAY_MAX) {
        /* Mapped written, for the reason write_pages gives (below the size
         * of a huge page: a hashed region's array, dense with small blocks). */
        if (!(a = bytes < PAGES_HUGE_BYTES ? pages_alloc_filled(bytes) : pages_alloc_huge(bytes)))
            return NULL;
        p->bytes += bytes;
    } else {
        struct slab *s = p->room[size_class];
        if (!s && !(s = new_slab(p, size_class)))
            return NULL;
        if ((a = s->free)) {
            s->free = a->next;
            memset(a, 0, bytes);
        } else {
            a = (struct block_array *)s->unused;
            s->unused += bytes;
            write_pages(s, (size_t)(s->unused - (char *)s));
            if (s->written)   /* (its pages up to `touched` hold an older size's arrays) */
                memset(a, 0, bytes);
            touch(p, s, (size_t)(s->unused - (char *)s));
        }
        s->arrays++;
        if (!slab_has_room(s, bytes)) {
            unlink_slab(&p->room[size_class], s);
            s->listed = false;
        }
    }
    a->capacity = block_pool_capacity(size_class);
    a->size_class = (uint16_t)size_class;
    a->stamp = __atomic_add_fetch(&stamps, 2, __ATOMIC_RELAXED) - 1;
    return a;
}

/* Empty slabs kept as they are, for the next size, up to an eighth of
 * what the pool holds or KEEP_SMALL in a small pool: emptying one gives its
 * pages back, to be faulted in again (a few microseconds each under a
 * hypervisor), and the call interrupts the program's other CPUs to flush
 * their TLBs. A growing table empties its smallest slabs again and again. */
#define KEEP_SMALL ((size_t)64 << 10)
static bool keep_written(const struct block_pool *p, const struct slab *s)
{
    size_t keep = p->bytes / 8 > KEEP_SMALL ? p->bytes / 8 : KEEP_SMALL;
    return p->empty_written + s->touched <= keep;
}

/* An array no reader holds back to its slab; a slab left with none handed
 * out ready for any size. */
static void release(struct block_pool *p, struct block_array *a)
{
    size_t bytes = array_bytes(a->size_class, p->packed);
    if (bytes > SLAB_ARRAY_MAX) {
        pages_free_quiet(a, bytes);
        p->bytes -= bytes;
        return;
    }
    struct slab *s = slab_of(a);
    a->next = s->free;
    s->free = a;
    if (--s->arrays == 0) {
        if (s->listed)
            unlink_slab(&p->room[s->size_class], s);
        if (keep_written(p, s)) {
            s->written = true;
            p->empty_written += s->touched;
        } else {
            p->bytes -= s->touched;
            madvise(s, SLAB_BYTES, MADV_DONTNEED);   /* zero again */
        }
        link_slab(&p->empty, s);
    } else if (!s->listed) {
        s->listed = true;
        link_slab(&p->room[s->size_class], s);
    }
}

void block_pool_give_back(struct block_pool *p, struct block_array *a)
{
    a->next = p->retired;   /* its stamp gone (a link is even) before anything else is written in it */
    __atomic_thread_fence(__ATOMIC_RELEASE);
    p->retired = a;
    if (!readers_none())
        return;
    while ((a = p->retired)) {
        p->retired = a->next;
        release(p, a);
    }
}
