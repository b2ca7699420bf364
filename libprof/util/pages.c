#include "pages.h"
#include <sys/mman.h>

void *pages_alloc(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void *pages_resize(void *p, size_t old_size, size_t new_size)
{
    if (!p)
        return pages_alloc(new_size);
    void *q = mremap(p, old_size, new_size, MREMAP_MAYMOVE);
    return q == MAP_FAILED ? NULL : q;
}

void pages_free(void *p, size_t size)
{
    if (p)
        munmap(p, size);
}
