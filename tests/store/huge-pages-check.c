/* util/pages.h's verdict on huge pages: a block table's pool asks for them
 * (its chunks past the first mapped MADV_HUGEPAGE) until a huge page takes
 * more CPU time than small ones, or PAGES_HUGE_SLOW_IN_A_ROW in a row more
 * wall time; then its next chunk is mapped for small pages. The timings
 * are given (pages_note_populate):
 * whether this machine's huge pages are slow at the moment is not the
 * test's to decide. Whether a mapping is meant for huge pages is the
 * kernel's word: VmFlags "hg" in /proc/self/smaps. */
#include "store/block_table.h"
#include "util/pages.h"
#include "../tap.h"
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The VmFlags of the mapping holding `addr` carry "hg" (MADV_HUGEPAGE). */
static bool advised_huge(const void *addr)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return false;
    char line[512];
    bool inside = false, huge = false;
    while (fgets(line, sizeof line, f)) {
        unsigned long start, end;
        if (sscanf(line, "%lx-%lx ", &start, &end) == 2 && strchr(line, '-') < strchr(line, ' '))
            inside = (uintptr_t)addr >= start && (uintptr_t)addr < end;
        else if (inside && strncmp(line, "VmFlags:", 8) == 0) {
            huge = strstr(line, " hg") != NULL;
            break;
        }
    }
    fclose(f);
    return huge;
}

/* A packed table grown until its pool maps a second chunk; that chunk's start. */
static char *second_chunk(struct block_table *t, struct block_table *spill, uintptr_t base)
{
    memset(t, 0, sizeof *t);
    memset(spill, 0, sizeof *spill);
    t->spill = spill;
    uint64_t replaced;
    char *first_end = NULL;
    for (size_t i = 0; i < 2000000; i++) {
        block_table_put(t, base + i * 64, 0, BLOCK_WORD(48, 1), &replaced);
        if (!first_end)
            first_end = t->pool.chunk_end;
        else if (t->pool.chunk_end != first_end)
            return t->pool.chunk_end - (4u << 20);
    }
    return NULL;
}

int main(void)
{
    static struct block_table before, before_spill, after, after_spill;
    /* Mapped before any verdict (a refusal takes two huge pages measured
     * after their chunk was mapped). */
    char *chunk = second_chunk(&before, &before_spill, 0x55550000);
    ok(chunk && before.pool.chunk_huge && advised_huge(chunk),
       "a pool's second chunk is mapped for huge pages (VmFlags hg) while they are not refused");

    /* The pool's own populates just now, on a machine loaded or not, taught
     * what they taught: forgotten. Small pages: 100 us for 128 KiB, 1.6 ms
     * expected of 2 MiB. */
    pages_forget_populates();
    pages_note_populate(128 << 10, 100000, 100000, PAGES_SMALL);
    uint64_t slow = 10000000000u, cheap = 200000;   /* 10 s, 200 us */
    pages_note_populate(128 << 10, slow, cheap, PAGES_HUGE_FIRST);
    ok(!pages_huge_refused(), "one huge page slow by the clock only (its thread preempted) refuses nothing");
    pages_note_populate(128 << 10, cheap, cheap, PAGES_HUGE_FIRST);
    pages_note_populate(128 << 10, slow, cheap, PAGES_HUGE_FIRST);
    ok(!pages_huge_refused(), "a cheap huge page between two slow by the clock: still not refused");
    pages_note_populate(128 << 10, slow, slow, PAGES_HUGE_REST);
    ok(!pages_huge_refused(), "the rest of a huge page is not timed");
    pages_note_populate(128 << 10, slow, cheap, PAGES_HUGE_FIRST);
    ok(pages_huge_refused(), "%d huge pages in a row slow by the clock: huge pages refused", PAGES_HUGE_SLOW_IN_A_ROW);
    pages_forget_populates();
    pages_note_populate(128 << 10, 100000, 100000, PAGES_SMALL);
    pages_note_populate(128 << 10, slow, 5000000, PAGES_HUGE_FIRST);
    ok(pages_huge_refused(), "one huge page that took more CPU time than 2 MiB of small pages: huge pages refused");

    chunk = second_chunk(&after, &after_spill, 0x7755550000);
    ok(chunk && !after.pool.chunk_huge && !advised_huge(chunk),
       "refused: a pool's next chunk is mapped for small pages (no VmFlags hg)");
    void *alone = pages_alloc_huge(4u << 20);
    ok(alone && !advised_huge(alone), "refused: pages_alloc_huge maps small pages");
    return tap_done();
}
