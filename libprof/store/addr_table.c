#include "addr_table.h"
#include "../util/pages.h"

#define INITIAL_CAPACITY 4096

static size_t slot_of(const struct addr_table *t, uintptr_t key)
{
    /* Objects sit at multiples of their slot size: mix the bits. */
    return (size_t)(((uint64_t)key * 0x9E3779B97F4A7C15ull) >> 20) & t->mask;
}

static bool grow(struct addr_table *t)
{
    size_t old_cap = t->slots ? t->mask + 1 : 0;
    size_t cap = old_cap ? old_cap * 2 : INITIAL_CAPACITY;
    struct addr_entry *slots = pages_alloc(cap * sizeof *slots);
    if (!slots)
        return false;
    struct addr_table bigger = { slots, cap - 1, 0 };
    for (size_t i = 0; i < old_cap; i++) {
        const struct addr_entry *e = &t->slots[i];
        if (!e->key)
            continue;
        size_t j = slot_of(&bigger, e->key);
        while (slots[j].key)
            j = (j + 1) & bigger.mask;
        slots[j] = *e;
        bigger.count++;
    }
    pages_free(t->slots, old_cap * sizeof *t->slots);
    *t = bigger;
    return true;
}

enum addr_put_result addr_table_put(struct addr_table *t, uintptr_t key, uint32_t site,
                                    uint32_t aux, uint64_t value)
{
    if ((!t->slots || (t->count + 1) * 2 > t->mask + 1) && !grow(t))
        return ADDR_PUT_NO_MEMORY;
    size_t i = slot_of(t, key);
    while (t->slots[i].key && t->slots[i].key != key)
        i = (i + 1) & t->mask;
    enum addr_put_result r = t->slots[i].key ? ADDR_PUT_REPLACED : ADDR_PUT_NEW;
    if (r == ADDR_PUT_NEW)
        t->count++;
    t->slots[i] = (struct addr_entry){ key, site, aux, value };
    return r;
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
