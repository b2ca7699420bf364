/* Memory for the runtime's own tables, straight from mmap.
 * Hooks run inside malloc's callers (and, later, inside malloc itself), so the
 * runtime never takes memory from the allocator it observes. */
#ifndef MEMPROF_UTIL_PAGES_H
#define MEMPROF_UTIL_PAGES_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void *pages_alloc(size_t size);                       /* zeroed; NULL on failure */
/* The same, every page mapped at once: for an array about to be written
 * throughout (a table's rebuild, a report's map). One call instead of a
 * fault per page, which under a hypervisor costs microseconds each. */
void *pages_alloc_filled(size_t size);
/* The same, in transparent huge pages where the kernel has them on request
 * (Debian's default is "madvise") and `size` spans one: for a table read at
 * random, where 4 KiB pages cost a TLB miss, a page walk through the
 * hypervisor's tables too, on nearly every access. */
void *pages_alloc_huge(size_t size);
/* Populate [p, p + size) now (MADV_POPULATE_WRITE; false without it),
 * timed, so that huge pages are asked for only while they come cheap. A
 * huge page's first touch clears 2 MiB at once; where the hypervisor gave
 * those pages back to its host (free page reporting), it faults them in
 * again one by one, and one huge page took 6-9 ms here where 512 small
 * pages took 1. So ranges of small pages set the cost expected of 2 MiB
 * (the least CPU time seen), and pages_alloc_huge maps small pages for the
 * rest of the process once a huge page took more CPU time than that (the
 * host's faults are the thread's CPU time here, and every huge page after
 * the first such one was as slow), or PAGES_HUGE_SLOW_IN_A_ROW in a row
 * took more wall time (a hypervisor that counts its faults as stolen
 * time). A thread preempted while it populates is slow by the clock only:
 * once is not enough. Safe in a hook: no lock, no allocation. */
enum pages_kind {
    PAGES_SMALL,        /* a mapping not meant for huge pages: timed, per byte */
    PAGES_HUGE_FIRST,   /* the start of a huge page in a mapping meant for them: timed, whole */
    PAGES_HUGE_REST,    /* the rest of one (mapped already, if huge): not timed */
};
bool pages_populate(void *p, size_t size, enum pages_kind kind);
/* The pages [p, p + size) span, of a private mapping about to be written
 * throughout, mapped now in one call (MADV_POPULATE_WRITE), untimed: a
 * fault costs 11-15 us a page under the hypervisor here, a page populated
 * under 1 (bench/fresh-pages). False without it, or with pages larger than
 * 4 KiB (nothing lost: the pages fault in as written). No lock, no
 * allocation: safe in a hook. */
bool pages_fill(const void *p, size_t size);
/* How far ahead memory written in order is mapped (pages_fill_ahead). */
#define PAGES_FILL_AHEAD ((size_t)64 << 10)
/* For memory written in order from `base` up to `limit` bytes: once the
 * `used` bytes pass the *filled mapped ahead, the next PAGES_FILL_AHEAD
 * mapped in one call (pages_fill) and *filled moved past them. */
void pages_fill_ahead(void *base, size_t used, size_t *filled, size_t limit);
#define PAGES_HUGE_SLOW_IN_A_ROW 2
/* A populate's wall and CPU time as pages_populate takes them, and what
 * the populates so far taught forgotten: for a test (its own pools'
 * populates are timed too, on a machine it does not choose). */
void pages_note_populate(size_t size, uint64_t wall_ns, uint64_t cpu_ns, enum pages_kind kind);
void pages_forget_populates(void);
/* Huge pages refused after slow ones (pages_populate). */
bool pages_huge_refused(void);
/* A transparent huge page (x86-64's, and aarch64's with 4 KiB pages): a
 * range mapped for huge pages is one only where it covers one, aligned. */
#define PAGES_HUGE_BYTES ((size_t)2 << 20)
/* The same, in the lowest 2 GiB (MAP_32BIT): a table generated code reaches
 * by a 32-bit address plus an index register. NULL when there is no room. */
void *pages_alloc_low(size_t size);
void *pages_resize(void *p, size_t old_size, size_t new_size); /* keeps contents */
/* Room for `need` bytes in the array at *p (*bytes long; NULL and 0 at
 * first): the size doubles, from `first`, until it fits. False when out of
 * memory (the array is left as it was). */
bool pages_grow(void **p, size_t *bytes, size_t need, size_t first);
void pages_free(void *p, size_t size);
/* Unmapped with no change of pages_generation: memory no reader in another
 * process reads (an owner's index), or whose reader checks each piece of it
 * itself (a block array's stamp). */
void pages_free_quiet(void *p, size_t size);
/* Counts every unmapping and move of these pages: a reader in another
 * process (memprof top) that finds it changed while it read reads again. */
extern uint64_t pages_generation;

#endif
