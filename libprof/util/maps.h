/* The process's own memory map, read from /proc/self/maps without malloc.
 * Used to learn a page's protection before writing a GOT slot, and to check
 * that an address is mapped before the report reads an object there. */
#ifndef MEMPROF_UTIL_MAPS_H
#define MEMPROF_UTIL_MAPS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

struct maps_range {
    uintptr_t start, end;
    int prot;              /* PROT_READ | PROT_WRITE | PROT_EXEC */
};

struct maps {
    struct maps_range *ranges; /* sorted; neighbours with equal prot merged */
    size_t count;
    size_t bytes;              /* size of the ranges allocation */
    size_t last;               /* the range found last: a report asks of one
                                  heap page after another (a lookup's hint,
                                  written by maps_find; one thread per map) */
};

int maps_load(struct maps *m);        /* 0, or an errno */
void maps_release(struct maps *m);
const struct maps_range *maps_find(const struct maps *m, uintptr_t addr);
bool maps_readable_searched(const struct maps *m, uintptr_t addr, size_t len);

/* Whether [addr, addr + len) is mapped readable. Inline for the range found
 * last: a report asks this of each object in turn (twice for a Ruby
 * object), and the call and the search were most of it. */
static inline bool maps_readable(const struct maps *m, uintptr_t addr, size_t len)
{
    if (m->last < m->count) {
        const struct maps_range *r = &m->ranges[m->last];
        if (addr >= r->start && addr < r->end)
            return (r->prot & PROT_READ) && len <= r->end - addr;
    }
    return maps_readable_searched(m, addr, len);
}
#endif
