/* Memory for the runtime's own tables, straight from mmap.
 * Hooks run inside malloc's callers (and, later, inside malloc itself), so the
 * runtime never takes memory from the allocator it observes. */
#ifndef MEMPROF_UTIL_PAGES_H
#define MEMPROF_UTIL_PAGES_H
#include <stddef.h>

void *pages_alloc(size_t size);                       /* zeroed; NULL on failure */
void *pages_resize(void *p, size_t old_size, size_t new_size); /* keeps contents */
void pages_free(void *p, size_t size);

#endif
