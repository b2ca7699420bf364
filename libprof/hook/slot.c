#include "slot.h"
#include <errno.h>
#include <sys/mman.h>
#include <sys/auxv.h>

void slot_writer_begin(struct slot_writer *w, const struct maps *maps)
{
    *w = (struct slot_writer){ .maps = maps };
}

int slot_writer_end(struct slot_writer *w)
{
    if (!w->open_page)
        return 0;
    uintptr_t page = w->open_page;
    w->open_page = 0;
    return mprotect((void *)page, (size_t)getauxval(AT_PAGESZ), w->open_prot) == 0 ? 0 : errno;
}

int slot_writer_put(struct slot_writer *w, uintptr_t *slot, uintptr_t value)
{
    uintptr_t page_size = (uintptr_t)getauxval(AT_PAGESZ);
    uintptr_t page = (uintptr_t)slot & ~(page_size - 1);
    if (page != w->open_page) {
        const struct maps_range *r = maps_find(w->maps, (uintptr_t)slot);
        if (!r)
            return EFAULT;
        int err = slot_writer_end(w);
        if (err)
            return err;
        if (!(r->prot & PROT_WRITE)) {
            if (mprotect((void *)page, page_size, r->prot | PROT_WRITE) != 0)
                return errno;
            w->open_page = page;
            w->open_prot = r->prot;
        }
    }
    __atomic_store_n(slot, value, __ATOMIC_RELEASE);
    return 0;
}
