#include "pages.h"
#include "clock.h"
#include <stdint.h>
#include <sys/mman.h>

uint64_t pages_generation;

/* Memory a reader in another process may be reading goes away. */
static void pages_changed(void)
{
    __atomic_add_fetch(&pages_generation, 1, __ATOMIC_RELEASE);
}

static void *map(size_t size, int flags)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void *pages_alloc(size_t size)
{
    return map(size, 0);
}

void *pages_alloc_filled(size_t size)
{
    return map(size, MAP_POPULATE);
}

/* What pages_populate learnt (any thread's pool: relaxed atomics). */
static uint64_t small_ns_per_huge = UINT64_MAX;   /* the least CPU time of 2 MiB of small pages seen, scaled */
static unsigned huge_slow_in_a_row;               /* by the clock */
static bool huge_refused;

void pages_note_populate(size_t size, uint64_t wall_ns, uint64_t cpu_ns, enum pages_kind kind)
{
    if (kind == PAGES_HUGE_REST)
        return;
    if (kind == PAGES_SMALL) {
        if (size < 4096)
            return;
        uint64_t ns = cpu_ns ? cpu_ns : wall_ns;   /* 0: no thread CPU clock */
        uint64_t scaled = ns * (PAGES_HUGE_BYTES / 4096) / (size / 4096);
        uint64_t best = __atomic_load_n(&small_ns_per_huge, __ATOMIC_RELAXED);
        while (scaled < best &&
               !__atomic_compare_exchange_n(&small_ns_per_huge, &best, scaled, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            ;
        return;
    }
    uint64_t expected = __atomic_load_n(&small_ns_per_huge, __ATOMIC_RELAXED);
    if (expected == UINT64_MAX || wall_ns <= expected) {   /* nothing to compare with yet, or cheap */
        __atomic_store_n(&huge_slow_in_a_row, 0, __ATOMIC_RELAXED);
        return;
    }
    if (cpu_ns > expected ||
        __atomic_add_fetch(&huge_slow_in_a_row, 1, __ATOMIC_RELAXED) >= PAGES_HUGE_SLOW_IN_A_ROW)
        __atomic_store_n(&huge_refused, true, __ATOMIC_RELAXED);
}

void pages_forget_populates(void)
{
    __atomic_store_n(&small_ns_per_huge, UINT64_MAX, __ATOMIC_RELAXED);
    __atomic_store_n(&huge_slow_in_a_row, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&huge_refused, false, __ATOMIC_RELAXED);
}

bool pages_huge_refused(void)
{
    return __atomic_load_n(&huge_refused, __ATOMIC_RELAXED);
}

bool pages_populate(void *p, size_t size, enum pages_kind kind)
{
#ifdef MADV_POPULATE_WRITE
    if (kind == PAGES_HUGE_REST)
        return madvise(p, size, MADV_POPULATE_WRITE) == 0;
    uint64_t wall = clock_now_ns(), cpu = clock_thread_cpu_ns();
    if (madvise(p, size, MADV_POPULATE_WRITE) != 0)
        return false;
    pages_note_populate(size, clock_now_ns() - wall, clock_thread_cpu_ns() - cpu, kind);
    return true;
#else
    (void)p, (void)size, (void)kind;
    return false;
#endif
}

bool pages_fill(const void *p, size_t size)
{
#ifdef MADV_POPULATE_WRITE
    uintptr_t page = 4096, start = (uintptr_t)p & ~(page - 1), end = ((uintptr_t)p + size + page - 1) & ~(page - 1);
    return size && madvise((void *)start, end - start, MADV_POPULATE_WRITE) == 0;
#else
    (void)p, (void)size;
    return false;
#endif
}

void pages_fill_ahead(void *base, size_t used, size_t *filled, size_t limit)
{
    if (used <= *filled)
        return;
    size_t to = used + PAGES_FILL_AHEAD < limit ? used + PAGES_FILL_AHEAD : limit;
    pages_fill((char *)base + *filled, to - *filled);
    *filled = to;
}

void *pages_alloc_huge(size_t size)
{
    void *p = map(size, 0);
#ifdef MADV_HUGEPAGE
    if (p && size >= PAGES_HUGE_BYTES && !pages_huge_refused())
        madvise(p, size, MADV_HUGEPAGE);   /* a refusal leaves 4 KiB pages: no harm */
#endif
    return p;
}

void *pages_alloc_low(size_t size)
{
#ifndef MAP_32BIT   /* x86-64's own */
    (void)size;
    return NULL;
#else
    void *p = map(size, MAP_32BIT);
    if (p && (uintptr_t)p + size > (uintptr_t)INT32_MAX + 1) {   /* a kernel that ignored the flag */
        pages_free(p, size);
        return NULL;
    }
    return p;
#endif
}

void *pages_resize(void *p, size_t old_size, size_t new_size)
{
    if (!p)
        return pages_alloc(new_size);
    void *q = mremap(p, old_size, new_size, MREMAP_MAYMOVE);
    if (q != p)
        pages_changed();
    return q == MAP_FAILED ? NULL : q;
}

bool pages_grow(void **p, size_t *bytes, size_t need, size_t first)
{
    if (need <= *bytes)
        return true;
    size_t grown = *bytes ? *bytes * 2 : first;
    while (grown < need)
        grown *= 2;
    void *q = pages_resize(*p, *bytes, grown);
    if (!q)
        return false;
    /* The arrays grown here are written in order: their next 64 KiB mapped
     * in one call, not a fault a page. */
    size_t ahead = grown - *bytes < PAGES_FILL_AHEAD ? grown - *bytes : PAGES_FILL_AHEAD;
    pages_fill((char *)q + *bytes, ahead);
    *p = q;
    *bytes = grown;
    return true;
}

void pages_free(void *p, size_t size)
{
    if (p) {
        pages_changed();
        munmap(p, size);
    }
}

void pages_free_quiet(void *p, size_t size)
{
    if (p)
        munmap(p, size);
}
