/* Hash-consing of fixed-size tuples: each distinct (a, b) pair gets a small,
 * stable integer id, so a record that names it stores 4 bytes instead of 16.
 * Used for stack frames (file, line, caller) and for the Ruby tracer's
 * (site, class) origins. mmap'd memory only; not locked: the owner serializes. */
#ifndef MEMPROF_STORE_INTERN_H
#define MEMPROF_STORE_INTERN_H
#include <stddef.h>
#include <stdint.h>

#define INTERN_NONE UINT32_MAX

struct intern_tuple { uint64_t a, b; };

struct intern_table {
    struct intern_tuple *tuples;   /* by id */
    size_t count, tuple_bytes;
    uint32_t *index;               /* open-addressed set of (id + 1) */
    size_t mask;
};

/* The id of (a, b), added if new; INTERN_NONE when out of memory. */
uint32_t intern_put(struct intern_table *t, uint64_t a, uint64_t b);
static inline const struct intern_tuple *intern_get(const struct intern_table *t, uint32_t id)
{
    return &t->tuples[id];
}
/* After the owner rewrote tuples in place (a moved object): rebuild the index.
 * Tuples that became equal keep their own ids. 0, or -1 when out of memory. */
int intern_reindex(struct intern_table *t);
void intern_free(struct intern_table *t);
size_t intern_bytes(const struct intern_table *t);
#endif
