/* Memory the runtime is about to write mapped in one call (pages_fill):
 * a fault costs 11-15 us a page under the hypervisor here, a page
 * populated under 1 us (bench/fresh-pages). The kernel's word on it:
 * mincore for what is resident, getrusage for the faults taken. A fresh
 * anonymous range from an unaligned start, a private copy of initialised
 * data (the Ruby tracer's pc cache is one), and a slot map's records as a
 * Ruby heap of 200 pages is recorded, which are mapped 64 KiB ahead.
 * (bench/fresh-pages shows what it saves; getrusage counts a page
 * populated as a fault, so the faults saved are not counted here.) */
#include "store/slot_map.h"
#include "util/pages.h"
#include "../tap.h"
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#define PAGE 4096u

static long faults_now(void)
{
    struct rusage u;
    getrusage(RUSAGE_THREAD, &u);
    return u.ru_minflt + u.ru_majflt;
}

/* How many of the `n` pages from `p` (page-aligned) are resident. */
static size_t resident(const void *p, size_t n)
{
    unsigned char v[256];
    if (n > sizeof v || mincore((void *)p, n * PAGE, v) != 0)
        return (size_t)-1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += v[i] & 1;
    return k;
}

/* Written in place below: its private copy is what pages_fill makes. */
static char data_pages[64 * PAGE] __attribute__((aligned(PAGE))) = { 1 };

int main(void)
{
    char *fresh = mmap(NULL, 64 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ok(fresh != MAP_FAILED && resident(fresh, 64) == 0, "64 fresh pages, none resident");
    bool filled = pages_fill(fresh + 100, 64 * PAGE - 200);   /* from inside the first page to inside the last */
    ok(filled && resident(fresh, 64) == 64,
       "pages_fill from an unaligned start: every page it touches resident (%zu of 64)", resident(fresh, 64));
    long before = faults_now();
    for (size_t i = 0; i < 64; i++)
        fresh[i * PAGE] = 1;
    ok(faults_now() - before == 0, "... and written without a fault (%ld)", faults_now() - before);
    ok(!pages_fill(fresh, 0), "nothing to fill: false, no call");

    ok(pages_fill(data_pages, sizeof data_pages), "initialised data filled (a private copy of each page)");
    before = faults_now();
    for (size_t i = 0; i < sizeof data_pages; i += PAGE)
        data_pages[i] = 2;
    ok(faults_now() - before == 0, "... and written without a fault (%ld)", faults_now() - before);

    /* A heap of 16 KiB pages of 40-byte slots: 3,280 bytes of records a
     * page. The records of the first page put, the next 64 KiB of them are
     * resident before any is written. (getrusage cannot tell: it counts a
     * page populated as a fault.) */
    static struct slot_map map;
    slot_map_init(&map, 16384, 40);
    uintptr_t heap = (uintptr_t)0x7f0000000000;
    bool put = true;
    for (uintptr_t slot = 0; slot < 409; slot++)
        put &= slot_map_put(&map, heap + slot * 40, 1, 0) == SLOT_PUT_NEW;
    const char *chunk = map.chunks;
    size_t ahead = map.chunk_filled - map.chunk_used, span = (map.chunk_filled + PAGE - 1) / PAGE;
    ok(put && chunk && ahead >= ((size_t)64 << 10) - PAGE && resident(chunk, span) == span,
       "one heap page's records put: %zu bytes more mapped ahead, all %zu pages resident", ahead, span);
    for (uintptr_t page = 1; page < 200; page++)
        for (uintptr_t slot = 0; slot < 409; slot++)
            put &= slot_map_put(&map, heap + page * 16384 + slot * 40, 1, 0) == SLOT_PUT_NEW;
    span = (map.chunk_filled + PAGE - 1) / PAGE;
    ok(put && map.count == 200 * 409 && map.chunks == chunk && resident(chunk, span) == span &&
           map.chunk_filled > map.chunk_used,
       "200 heap pages' records put (%zu), every page of them resident, %zu bytes ahead", map.count,
       map.chunk_filled - map.chunk_used);
    slot_map_clear(&map);
    return tap_done();
}
