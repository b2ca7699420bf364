#include "code_write.h"
#include "../arch/x86_64/emit.h"
#include "../util/tasks.h"
#include <errno.h>
#include <string.h>
#include <linux/membarrier.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

bool code_write_atomic(uintptr_t at, unsigned width)
{
    return (at & 63) + width <= 64;
}

#define JMP_REL32_LENGTH 5
#define WINDOW 8

bool code_jmp_window(uintptr_t at, uintptr_t *window)
{
    for (uintptr_t w = at; w + WINDOW >= at + JMP_REL32_LENGTH && w + 3 >= at; w--)
        if (code_write_atomic(w, WINDOW)) {
            *window = w;
            return true;
        }
    return false;
}

uint64_t code_jmp_window_bytes(uintptr_t window, uint64_t before, uintptr_t at, uintptr_t target, size_t pad)
{
    uint8_t bytes[WINDOW];
    memcpy(bytes, &before, WINDOW);
    size_t offset = at - window;
    struct emitter e;
    emit_init(&e, bytes + offset, WINDOW - offset, at);
    emit_jmp(&e, target);
    while (e.len < pad && e.len < WINDOW - offset)
        emit_int3(&e);
    uint64_t after;
    memcpy(&after, bytes, sizeof after);
    return after;
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

static int membarrier_registered;   /* 1 registered, -1 not available */

void code_write_prepare(void)
{
    if (__atomic_load_n(&membarrier_registered, __ATOMIC_RELAXED))
        return;
    long rc = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
    __atomic_store_n(&membarrier_registered, rc == 0 ? 1 : -1, __ATOMIC_RELAXED);
}

void code_write_done(void)
{
    code_write_prepare();
    if (__atomic_load_n(&membarrier_registered, __ATOMIC_RELAXED) > 0)
        syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
}

static bool holds(uintptr_t at, uint64_t bytes, unsigned width)
{
    return memcmp((const void *)at, &bytes, width) == 0;
}

/* Forward: before -> after; backward: after -> before. */
static int transact(const struct code_patch *p, size_t n, bool forward)
{
    bool across = false;
    for (size_t i = 0; i < n; i++) {
        if (p[i].width != 4 && p[i].width != 8)
            return EINVAL;
        if (!holds(p[i].at, forward ? p[i].before : p[i].after, p[i].width))
            return EINVAL;
        across |= !code_write_atomic(p[i].at, p[i].width);
    }
    /* A store across a cache line is one instruction to this thread (a
     * signal comes before it or after) but may be seen half made by
     * another: fine only when there is no other. */
    if (across && !tasks_alone())
        return EXDEV;
    struct maps maps = { 0 };
    int err = maps_load(&maps);
    size_t made = 0;
    while (!err && made < n) {
        err = code_write(&maps, p[made].at, forward ? p[made].after : p[made].before, p[made].width);
        if (!err)
            made++;
    }
    if (err)   /* all or none: the ones made go back */
        while (made-- > 0)
            code_write(&maps, p[made].at, forward ? p[made].before : p[made].after, p[made].width);
    code_write_done();
    maps_release(&maps);
    return err;
}

int code_patch_apply(const struct code_patch *patches, size_t count)
{
    return transact(patches, count, true);
}

int code_patch_undo(const struct code_patch *patches, size_t count)
{
    return transact(patches, count, false);
}
