#include "code_write.h"
#include <errno.h>
#include <linux/membarrier.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

bool code_write_atomic(uintptr_t at, unsigned width)
{
    return (at & 63) + width <= 64;
}

int code_write(const struct maps *maps, uintptr_t at, uint64_t value, unsigned width)
{
    uintptr_t page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t first = at & ~(page_size - 1);
    size_t len = ((at + width - 1) & ~(page_size - 1)) - first + page_size;
    const struct maps_range *r = maps_find(maps, at);
    int prot = r ? r->prot : PROT_READ | PROT_EXEC;
    if (!(prot & PROT_WRITE) && mprotect((void *)first, len, prot | PROT_WRITE | PROT_EXEC) != 0)
        return errno;
    /* One instruction, whatever the alignment. */
    if (width == 8)
        __asm__ volatile("movq %1, %0" : "=m"(*(uint64_t *)at) : "r"(value) : "memory");
    else
        __asm__ volatile("movl %1, %0" : "=m"(*(uint32_t *)at) : "r"((uint32_t)value) : "memory");
    if (!(prot & PROT_WRITE) && mprotect((void *)first, len, prot) != 0)
        return errno;
    return 0;
}

void code_write_done(void)
{
    static int registered;   /* 1 registered, -1 not available */
    if (!registered)
        registered = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) == 0 ? 1 : -1;
    if (registered > 0)
        syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
}
