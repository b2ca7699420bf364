/* Live allocations keyed by address: open addressing with linear probing and
 * backward-shift deletion (no tombstones), in mmap'd memory. Not locked: the
 * owner serializes access. 16 bytes per entry and at least 3/8 full, so at
 * most 43 bytes per live entry. */
#ifndef MEMPROF_STORE_ADDR_TABLE_H
#define MEMPROF_STORE_ADDR_TABLE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct addr_entry {
    uintptr_t key;     /* 0: empty */
    uint32_t origin;   /* tracer-defined (an interned id: where it came from) */
    uint32_t aux;      /* tracer-defined (heap: the block's size, saturated) */
};

struct addr_table {
    struct addr_entry *slots;
    size_t mask;       /* capacity - 1; capacity is a power of two */
    size_t count;
};

enum addr_put_result { ADDR_PUT_NEW, ADDR_PUT_REPLACED, ADDR_PUT_NO_MEMORY };

enum addr_put_result addr_table_put(struct addr_table *t, uintptr_t key, uint32_t origin,
                                    uint32_t aux);
struct addr_entry *addr_table_get(const struct addr_table *t, uintptr_t key);
bool addr_table_remove(struct addr_table *t, uintptr_t key);
void addr_table_free(struct addr_table *t);
size_t addr_table_bytes(const struct addr_table *t);

#define addr_table_each(t, e) \
    for (struct addr_entry *e = (t)->slots; (t)->slots && e <= (t)->slots + (t)->mask; e++) \
        if (e->key)
#endif
