/* The command-line tools' growing arrays. */
#ifndef MEMPROF_TOOLS_GROW_H
#define MEMPROF_TOOLS_GROW_H
#include <stdlib.h>

/* Room for one more item in an array of `count` items of `size` bytes with
 * room for *cap: the array itself while it has room, else the array moved
 * to twice the room (`first` items at first), *cap updated. NULL when
 * memory runs out; the array and *cap are then as they were. */
static inline void *grow_array(void *items, size_t count, size_t *cap, size_t size, size_t first)
{
    if (count < *cap)
        return items;
    size_t more = *cap ? *cap * 2 : first;
    void *moved = realloc(items, more * size);
    if (moved)
        *cap = more;
    return moved;
}

#endif
