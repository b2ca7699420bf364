/* A custom allocator in a library of its own (so its callers reach it
 * through their GOT): blocks carved out of one malloc block, the first at
 * that block's very address. For heap-custom.test. */
#include <stddef.h>
#include <stdlib.h>

struct pool {
    char *base;
    size_t used, capacity;
    size_t live;
};

struct pool *pool_create(size_t capacity)
{
    struct pool *p = malloc(sizeof *p);
    if (!p)
        return NULL;
    p->base = malloc(capacity);
    p->used = p->live = 0;
    p->capacity = capacity;
    return p;
}

void *pool_alloc(struct pool *p, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    if (p->capacity - p->used < size)
        return NULL;
    void *block = p->base + p->used;
    p->used += size;
    p->live++;
    return block;
}

void pool_free(struct pool *p, void *block)
{
    if (block)
        p->live--;
}
