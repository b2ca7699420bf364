#include "addr_table.h"
#include "../util/pages.h"

#define INITIAL_CAPACITY 4096

static size_t slot_of(const struct addr_table *t, uintptr_t key)
{
    /* Objects sit at multiples of their slot size: mix the bits. */
    return (size_t)(((uint64_t)key * 0x9E3779B97F4A7C15ull) >> 20) & t->mask;
}

/* Store an entry whose key is not in the table (or replace it). */
static enum addr_put_result place(struct addr_table *t, const struct addr_entry *e)
{
    size_t i = slot_of(t, e->key);
    while (t->slots[i].key && t->slots[i].key != e->key)
        i = (i + 1) & t->mask;
    enum addr_put_result r = t->slots[i].key ? ADDR_PUT_REPLACED : ADDR_PUT_NEW;
    if (r == ADDR_PUT_NEW)
        t->count++;
    t->slots[i] = *e;
    return r;
}

static bool empty_table(struct addr_table *t, size_t cap)
{
    struct addr_entry *slots = pages_alloc(cap * sizeof *slots);
    if (!slots)
        return false;
    *t = (struct addr_table){ slots, cap - 1, 0 };
    return true;
}

static bool grow(struct addr_table *t)
{
    size_t old_cap = t->slots ? t->mask + 1 : 0;
    struct addr_table bigger;
    if (!empty_table(&bigger, old_cap ? old_cap * 2 : INITIAL_CAPACITY))
        return false;
    for (size_t i = 0; i < old_cap; i++)
        if (t->slots[i].key)
            place(&bigger, &t->slots[i]);
    pages_free(t->slots, old_cap * sizeof *t->slots);
    *t = bigger;
    return true;
}

enum addr_put_result addr_table_put(struct addr_table *t, uintptr_t key, uint32_t origin,
                                    uint32_t aux)
{
    /* At most 3/4 full: linear probing stays short, and after a doubling the
     * table is still 3/8 full (16 bytes / 0.375 = 43 bytes per entry). */
    if ((!t->slots || (t->count + 1) * 4 > (t->mask + 1) * 3) && !grow(t))
        return ADDR_PUT_NO_MEMORY;
    return place(t, &(struct addr_entry){ key, origin, aux });
}

struct addr_entry *addr_table_get(const struct addr_table *t, uintptr_t key)
{
    if (!t->slots)
        return NULL;
    for (size_t i = slot_of(t, key); t->slots[i].key; i = (i + 1) & t->mask)
        if (t->slots[i].key == key)
            return &t->slots[i];
    return NULL;
}

bool addr_table_remove(struct addr_table *t, uintptr_t key)
{
    struct addr_entry *e = addr_table_get(t, key);
    if (!e)
        return false;
    /* Backward shift: pull later members of the probe run into the hole. */
    size_t hole = (size_t)(e - t->slots);
    for (size_t i = (hole + 1) & t->mask; t->slots[i].key; i = (i + 1) & t->mask) {
        size_t home = slot_of(t, t->slots[i].key);
        if (((i - home) & t->mask) >= ((i - hole) & t->mask)) {
            t->slots[hole] = t->slots[i];
            hole = i;
        }
    }
    t->slots[hole].key = 0;
    t->count--;
    return true;
}

void addr_table_free(struct addr_table *t)
{
    if (t->slots)
        pages_free(t->slots, (t->mask + 1) * sizeof *t->slots);
    *t = (struct addr_table){ 0 };
}

size_t addr_table_bytes(const struct addr_table *t)
{
    return t->slots ? (t->mask + 1) * sizeof *t->slots : 0;
}
