#include "block_table.h"
#include "../util/pages.h"

#define MIN_CAPACITY 1024

static size_t array_bytes(size_t capacity)
{
    return sizeof(struct block_array) + capacity * sizeof(struct block_slot);
}

int block_table_rebuild(struct block_table *t)
{
    struct block_array *old = t->array;
    size_t capacity = old ? old->capacity : MIN_CAPACITY;
    if (old && t->count + 1 > capacity / 4 * 3)
        capacity += capacity / 2;
    struct block_array *a = pages_alloc_filled(array_bytes(capacity));
    if (!a)
        return -1;
    a->capacity = capacity;
    size_t used = 0;
    for (size_t j = 0; old && j < old->capacity; j++) {
        const struct block_slot *s = &old->slots[j];
        if (!BLOCK_IS_LIVE(s->addr))
            continue;
        size_t i = block_index(s->addr, capacity);
        while (a->slots[i].addr != BLOCK_EMPTY)
            i = i + 1 == capacity ? 0 : i + 1;
        a->slots[i] = *s;
        used++;
    }
    __atomic_store_n(&t->array, a, __ATOMIC_SEQ_CST);
    t->used = used;
    if (old)
        readers_retire(&t->retired, old, array_bytes(old->capacity));
    return 0;
}

size_t block_table_bytes(const struct block_table *t)
{
    return t->array ? array_bytes(t->array->capacity) : 0;
}
