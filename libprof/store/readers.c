#include "readers.h"
#include "../util/pages.h"
#include <stdbool.h>

static unsigned long readers;   /* reports reading owners' arrays now */

void readers_enter(void)
{
    __atomic_add_fetch(&readers, 1, __ATOMIC_SEQ_CST);
}

void readers_leave(void)
{
    __atomic_sub_fetch(&readers, 1, __ATOMIC_SEQ_CST);
}

bool readers_none(void)
{
    return __atomic_load_n(&readers, __ATOMIC_SEQ_CST) == 0;
}

void readers_retire(struct retired *r, void *old, size_t bytes)
{
    if (!old)
        return;
    if (readers_none()) {
        for (unsigned i = 0; i < r->count; i++)
            pages_free(r->pages[i], r->bytes[i]);
        r->count = 0;
        pages_free(old, bytes);
        return;
    }
    if (r->count < RETIRED_MAX) {
        r->pages[r->count] = old;
        r->bytes[r->count++] = bytes;
    }
}

void readers_after_fork(void)
{
    __atomic_store_n(&readers, 0, __ATOMIC_SEQ_CST);
}
