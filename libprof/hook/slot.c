#include "slot.h"
#include <errno.h>
#include <sys/mman.h>
#include <sys/auxv.h>

int slot_write(const struct maps *maps, uintptr_t *slot, uintptr_t value)
{
    const struct maps_range *r = maps_find(maps, (uintptr_t)slot);
    if (!r)
        return EFAULT;
    if (r->prot & PROT_WRITE) {
        __atomic_store_n(slot, value, __ATOMIC_RELEASE);
        return 0;
    }
    uintptr_t page_size = (uintptr_t)getauxval(AT_PAGESZ);
    void *page = (void *)((uintptr_t)slot & ~(page_size - 1));
    if (mprotect(page, page_size, r->prot | PROT_WRITE) != 0)
        return errno;
    __atomic_store_n(slot, value, __ATOMIC_RELEASE);
    if (mprotect(page, page_size, r->prot) != 0)
        return errno;
    return 0;
}
