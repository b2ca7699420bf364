/* Caller-side hooking (see callsite.h).
 *
 * A displacement is written with one 4-byte store while its page is
 * read+write+execute for a moment (the code keeps running meanwhile, so it
 * cannot lose execute); x86 makes a store that does not cross a cache line
 * atomic, and a core that fetches the instruction sees one displacement or
 * the other. Afterwards every thread of the process is made to serialize its
 * instruction stream (membarrier SYNC_CORE), as cross-modifying code asks. */
#include "callsite.h"
#include "../arch/x86_64/decode.h"
#include "../util/maps.h"
#include "../util/pages.h"
#include <errno.h>
#include <linux/membarrier.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CALL_REL32_LENGTH 5

static int32_t displacement_at(uintptr_t site)
{
    int32_t d;
    memcpy(&d, (const void *)(site + 1), sizeof d);
    return d;
}

static uintptr_t call_target(uintptr_t site)
{
    return site + CALL_REL32_LENGTH + (uintptr_t)(intptr_t)displacement_at(site);
}

static bool add_site(struct callsite_patch *p, uintptr_t site)
{
    if ((p->count + 1) * sizeof *p->sites > p->bytes) {
        size_t bytes = p->bytes ? p->bytes * 2 : 4096;
        uintptr_t *sites = pages_resize(p->sites, p->bytes, bytes);
        if (!sites)
            return false;
        p->sites = sites;
        int32_t *original = pages_resize(p->original, p->bytes, bytes);
        if (!original)
            return false;
        p->original = original;
        p->bytes = bytes;
    }
    p->sites[p->count] = site;
    p->original[p->count++] = displacement_at(site);
    return true;
}

int callsite_find(const struct code_range *functions, size_t n, uintptr_t target, struct callsite_patch *out)
{
    memset(out, 0, sizeof *out);
    out->target = target;
    struct maps maps;
    int err = maps_load(&maps);
    if (err)
        return err;
    for (size_t f = 0; f < n; f++) {
        uintptr_t pc = functions[f].start, end = functions[f].start + functions[f].size;
        if (!maps_readable(&maps, pc, functions[f].size))
            continue;   /* a symbol that is not mapped code (a stale symbol file) */
        struct insn in;
        while (pc < end && decode_insn((const void *)pc, end - pc, pc, &in)) {
            if (in.kind == INSN_CALL_REL32 && in.length == CALL_REL32_LENGTH && in.target == target &&
                !add_site(out, pc)) {
                maps_release(&maps);
                callsite_free(out);
                return ENOMEM;
            }
            pc += in.length;
        }
    }
    maps_release(&maps);
    /* Functions come in any order: the sites go ascending. */
    for (size_t i = 1; i < out->count; i++)
        for (size_t j = i; j > 0 && out->sites[j - 1] > out->sites[j]; j--) {
            uintptr_t s = out->sites[j];
            out->sites[j] = out->sites[j - 1], out->sites[j - 1] = s;
            int32_t d = out->original[j];
            out->original[j] = out->original[j - 1], out->original[j - 1] = d;
        }
    return 0;
}

/* One 4-byte store: a single instruction, whatever the alignment. */
static void store_displacement(uintptr_t site, int32_t value)
{
    __asm__ volatile("movl %1, %0" : "=m"(*(int32_t *)(site + 1)) : "r"(value) : "memory");
}

static bool within_cache_line(uintptr_t site)
{
    uintptr_t field = site + 1;
    return (field & 63) <= 60;
}

static void serialize_all_threads(void)
{
    static int registered;   /* 1 registered, -1 not available */
    if (!registered)
        registered = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) == 0 ? 1 : -1;
    if (registered > 0)
        syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
}

/* Write values[i] into each site's displacement; each page made writable
 * for it and given back the protection the memory map shows. */
static int write_sites(const struct callsite_patch *p, const int32_t *values)
{
    struct maps maps;
    int err = maps_load(&maps);
    if (err)
        return err;
    uintptr_t page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (size_t i = 0; i < p->count && !err; i++) {
        uintptr_t first = (p->sites[i] + 1) & ~(page_size - 1);
        uintptr_t last = (p->sites[i] + 4) & ~(page_size - 1);
        const struct maps_range *r = maps_find(&maps, p->sites[i] + 1);
        int prot = r ? r->prot : PROT_READ | PROT_EXEC;
        size_t len = last - first + page_size;
        if (!(prot & PROT_WRITE) && mprotect((void *)first, len, prot | PROT_WRITE | PROT_EXEC) != 0) {
            err = errno;
            break;
        }
        store_displacement(p->sites[i], values[i]);
        if (!(prot & PROT_WRITE) && mprotect((void *)first, len, prot) != 0)
            err = errno;
    }
    maps_release(&maps);
    serialize_all_threads();
    return err;
}

int callsite_apply(struct callsite_patch *p, uintptr_t stub, size_t expected)
{
    if (p->stub)
        return EEXIST;
    if (p->count == 0 || (expected && p->count != expected))
        return ENOENT;
    for (size_t i = 0; i < p->count; i++) {
        uintptr_t site = p->sites[i];
        int64_t d = (int64_t)(stub - (site + CALL_REL32_LENGTH));
        if (call_target(site) != p->target || *(const uint8_t *)site != 0xE8)
            return EINVAL;
        if (d < INT32_MIN || d > INT32_MAX)
            return ERANGE;
        if (!within_cache_line(site))
            return EXDEV;
    }
    /* One displacement each: computed before any is written. */
    int32_t *values = pages_alloc(p->count * sizeof *values);
    if (!values)
        return ENOMEM;
    for (size_t i = 0; i < p->count; i++)
        values[i] = (int32_t)(int64_t)(stub - (p->sites[i] + CALL_REL32_LENGTH));
    int err = write_sites(p, values);
    if (err)
        write_sites(p, p->original);   /* none, then */
    else
        p->stub = stub;
    pages_free(values, p->count * sizeof *values);
    return err;
}

int callsite_restore(struct callsite_patch *p)
{
    if (!p->stub)
        return 0;
    for (size_t i = 0; i < p->count; i++)
        if (call_target(p->sites[i]) != p->stub)
            return EINVAL;
    int err = write_sites(p, p->original);
    if (!err)
        p->stub = 0;
    return err;
}

void callsite_free(struct callsite_patch *p)
{
    pages_free(p->sites, p->bytes);
    pages_free(p->original, p->bytes);
    memset(p, 0, sizeof *p);
}
