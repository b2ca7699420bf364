#include "own_code.h"
#include <link.h>

static struct own_code code;

static int find_segment(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    uintptr_t self = (uintptr_t)data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && self >= start && self < start + ph->p_memsz) {
            code.start = start;
            code.base = info->dlpi_addr;
            __atomic_store_n(&code.end, start + ph->p_memsz, __ATOMIC_RELEASE);
            return 1;
        }
    }
    return 0;
}

const struct own_code *own_code_find(void)
{
    /* Callers run at start-up or under their own locks: a second search
     * while one runs finds the same values. */
    if (!__atomic_load_n(&code.end, __ATOMIC_ACQUIRE))
        dl_iterate_phdr(find_segment, (void *)(uintptr_t)own_code_find);
    return &code;
}
