/* Caller-side hooking (see callsite.h). A displacement is written with one
 * 4-byte store (hook/code_write.c). */
#include "callsite.h"
#include "code_write.h"
#include "../util/pages.h"
#include "../util/sort.h"
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

static bool add_site(struct callsite_patch *p, uintptr_t site)
{
    if (!pages_grow((void **)&p->sites, &p->bytes, (p->count + 1) * sizeof *p->sites, 4096))
        return false;
    p->sites[p->count++] = (struct call_site){ site, displacement_at(site) };
    return true;
}

static int by_address(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    uintptr_t x = ((const struct call_site *)a)->at, y = ((const struct call_site *)b)->at;
    return (x > y) - (x < y);
}

/* A call of the target: kept. */
static int visit_call(void *ctx, uintptr_t pc, const struct insn *in)
{
    struct callsite_patch *p = ctx;
    if (in->kind != INSN_CALL_REL32 || in->length != CALL_REL32_LENGTH || in->target != p->target)
        return 0;
    return add_site(p, pc) ? 0 : ENOMEM;
}

int callsite_find(const struct code_range *functions, size_t n, uintptr_t target, struct callsite_patch *out)
{
    memset(out, 0, sizeof *out);
    out->target = target;
    int err = decode_ranges(functions, n, 0, visit_call, out);
    if (err) {
        callsite_free(out);
        return err;
    }
    /* Functions come in any order: the sites go ascending. */
    sort_items(out->sites, out->count, sizeof *out->sites, by_address, NULL);
    return 0;
}

static int32_t displacement_to(uintptr_t site, uintptr_t stub)
{
    return (int32_t)(int64_t)(stub - (site + CALL_REL32_LENGTH));
}

/* Each site's displacement: the original, then the stub's. */
static struct code_patch *site_patches(const struct callsite_patch *p, uintptr_t stub, size_t *bytes)
{
    *bytes = p->count * sizeof(struct code_patch);
    struct code_patch *patches = pages_alloc(*bytes);
    for (size_t i = 0; patches && i < p->count; i++)
        patches[i] = (struct code_patch){ .at = p->sites[i].at + 1, .width = 4,
                                          .before = (uint32_t)p->sites[i].original,
                                          .after = (uint32_t)displacement_to(p->sites[i].at, stub) };
    return patches;
}

int callsite_apply(struct callsite_patch *p, uintptr_t stub, size_t expected)
{
    if (p->stub)
        return EEXIST;
    if (p->count == 0 || (expected && p->count != expected))
        return ENOENT;
    for (size_t i = 0; i < p->count; i++) {
        uintptr_t site = p->sites[i].at;
        int64_t d = (int64_t)(stub - (site + CALL_REL32_LENGTH));
        struct insn insn;
        if (!decode_insn((const void *)site, CALL_REL32_LENGTH, site, &insn) || insn.kind != INSN_CALL_REL32 ||
            insn.target != p->target)
            return EINVAL;
        if (d < INT32_MIN || d > INT32_MAX)
            return ERANGE;
    }
    size_t bytes;
    struct code_patch *patches = site_patches(p, stub, &bytes);
    if (!patches)
        return ENOMEM;
    int err = code_patch_apply(patches, p->count);
    if (!err)
        p->stub = stub;
    pages_free(patches, bytes);
    return err;
}

int callsite_restore(struct callsite_patch *p)
{
    if (!p->stub)
        return 0;
    size_t bytes;
    struct code_patch *patches = site_patches(p, p->stub, &bytes);
    if (!patches)
        return ENOMEM;
    int err = code_patch_undo(patches, p->count);
    if (!err)
        p->stub = 0;
    pages_free(patches, bytes);
    return err;
}

void callsite_free(struct callsite_patch *p)
{
    pages_free(p->sites, p->bytes);
    memset(p, 0, sizeof *p);
}
