/* Caller-side hooking (see callsite.h). A displacement is written with one
 * 4-byte store (hook/code_write.c). */
#include "callsite.h"
#include "code_write.h"
#include "../arch/x86_64/decode.h"
#include "../util/maps.h"
#include "../util/pages.h"
#include <errno.h>
#include <stdbool.h>
#include <string.h>

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

/* Write values[i] into each site's displacement. */
static int write_sites(const struct callsite_patch *p, const int32_t *values)
{
    struct maps maps = { 0 };
    int err = maps_load(&maps);
    for (size_t i = 0; i < p->count && !err; i++)
        err = code_write(&maps, p->sites[i] + 1, (uint32_t)values[i], 4);
    code_write_done();
    maps_release(&maps);
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
        if (!code_write_atomic(site + 1, 4))
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
