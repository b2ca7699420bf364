#include "intern.h"
#include "../util/pages.h"
#include <string.h>

static size_t hash_tuple(uint64_t a, uint64_t b)
{
    uint64_t h = (a * 0x9E3779B97F4A7C15ull) ^ (b * 0xC2B2AE3D27D4EB4Full);
    return (size_t)(h ^ (h >> 29));
}

static void index_insert(uint32_t *index, size_t mask, const struct intern_tuple *tup, uint32_t id)
{
    size_t i = hash_tuple(tup->a, tup->b) & mask;
    while (index[i])
        i = (i + 1) & mask;
    index[i] = id + 1;
}

/* An index of `cap` buckets over every tuple (at most half full). */
static int rebuild(struct intern_table *t, size_t cap)
{
    uint32_t *index = pages_alloc_filled(cap * sizeof *index);   /* written all over: mapped at once */
    if (!index)
        return -1;
    for (size_t id = 0; id < t->count; id++)
        index_insert(index, cap - 1, &t->tuples[id], (uint32_t)id);
    if (t->index)
        pages_free(t->index, (t->mask + 1) * sizeof *t->index);
    t->index = index;
    t->mask = cap - 1;
    return 0;
}

uint32_t intern_put(struct intern_table *t, uint64_t a, uint64_t b)
{
    if (t->index) {
        for (size_t i = hash_tuple(a, b) & t->mask; t->index[i]; i = (i + 1) & t->mask) {
            const struct intern_tuple *tup = &t->tuples[t->index[i] - 1];
            if (tup->a == a && tup->b == b)
                return t->index[i] - 1;
        }
    }
    if (t->count >= INTERN_NONE - 1)
        return INTERN_NONE;
    if (!t->index || (t->count + 1) * 2 > t->mask + 1) {
        if (rebuild(t, t->index ? (t->mask + 1) * 2 : 1024) != 0)
            return INTERN_NONE;
    }
    if (!pages_grow((void **)&t->tuples, &t->tuple_bytes, (t->count + 1) * sizeof *t->tuples, 65536))
        return INTERN_NONE;
    uint32_t id = (uint32_t)t->count++;
    t->tuples[id] = (struct intern_tuple){ a, b };
    index_insert(t->index, t->mask, &t->tuples[id], id);
    return id;
}

int intern_reindex(struct intern_table *t)
{
    return t->index ? rebuild(t, t->mask + 1) : 0;
}

size_t intern_bytes(const struct intern_table *t)
{
    return t->tuple_bytes + (t->index ? (t->mask + 1) * sizeof *t->index : 0);
}

void intern_free(struct intern_table *t)
{
    pages_free(t->tuples, t->tuple_bytes);
    if (t->index)
        pages_free(t->index, (t->mask + 1) * sizeof *t->index);
    memset(t, 0, sizeof *t);
}
