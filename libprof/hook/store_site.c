/* Inline-site hooking (see store_site.h). A site's stub, near it in a pool:
 *
 *     mov %reg, VAR(%rip)                the store, replayed (or movq $imm, VAR(%rip))
 *     what stub_keep.h keeps, around
 *     movabs $id, %rdi; mov VAR(%rip), %rsi; movabs $handler, %rax; call *%rax
 *     jmp back                           to the instruction after the store
 *
 * The site becomes `jmp stub` and int3 padding up to the store's length, in
 * one 8-byte store within a cache line, from the store or ending with it,
 * with the bytes around it unchanged (hook/code_write.c). */
#include "store_site.h"
#include "code_write.h"
#include "jit.h"
#include "pool.h"
#include "stub_frames.h"
#include "stub_keep.h"
#include "../arch/x86_64/decode.h"
#include "../arch/x86_64/emit.h"
#include "../util/pages.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>

#define STUB_MAX 384
#define JMP_REL32_LENGTH 5
#define WINDOW 8          /* the bytes one patch replaces */


static bool add_site(struct store_patch *p, const struct store_site *site)
{
    if (!pages_grow((void **)&p->sites, &p->bytes, (p->count + 1) * sizeof *p->sites, 4096))
        return false;
    p->sites[p->count++] = *site;
    return true;
}

/* A store to the variable, long enough for the jmp: kept. */
static int visit_store(void *ctx, uintptr_t pc, const struct insn *in)
{
    struct store_patch *p = ctx;
    if (!(in->stores_register || in->stores_immediate) || in->rip_address != p->variable || in->store_width != 8 ||
        in->length < JMP_REL32_LENGTH)
        return 0;
    struct store_site site = { .at = pc, .length = in->length, .reg = in->store_register,
                               .immediate = in->stores_immediate, .imm = (int32_t)in->store_immediate };
    /* 8 bytes that hold the jmp, in one cache line if any do (else the
     * patch is made only by a thread alone in its process: EXDEV). */
    if (!code_jmp_window(pc, &site.window))
        site.window = pc;
    memcpy(site.original, (const void *)site.window, WINDOW);
    return add_site(p, &site) ? 0 : ENOMEM;
}

int store_sites_find(const struct code_range *code, size_t n, uintptr_t variable, struct store_patch *out)
{
    memset(out, 0, sizeof *out);
    out->variable = variable;
    /* A window may reach up to 8 bytes around a store. */
    int err = decode_ranges(code, n, WINDOW, visit_store, out);
    if (err)
        store_sites_free(out);
    return err;
}

/* The stub for one site; its entry in *entry. */
static int make_stub(const struct store_patch *p, const struct store_site *site, uint32_t id, const char *name,
                     store_handler_fn *handler, uintptr_t *entry)
{
    struct code_chunk chunk;
    int err = pool_reserve(site->at, STUB_MAX, &chunk);
    if (err)
        return err;
    struct emitter e;
    struct stub_frames f = { .start = chunk.exec };
    emit_init(&e, chunk.write, chunk.size, chunk.exec);
    emit_frame_begin(&e, 0);   /* no return address: the CFA is rsp at the site */
    if (site->immediate)
        emit_mov_store_rip_imm(&e, p->variable, site->imm);
    else
        emit_mov_store_rip(&e, p->variable, (enum reg)site->reg);
    stub_keep_begin(&e);
    emit_mov_imm64(&e, RDI, id);
    emit_mov_load_rip(&e, RSI, p->variable);   /* the value stored */
    emit_mov_imm64(&e, RAX, (uint64_t)(uintptr_t)handler);
    emit_call_reg(&e, RAX);
    stub_keep_end(&e);
    emit_jmp(&e, site->at + site->length);
    if ((err = stub_publish_resuming(&e, &f, &chunk, "store", name, site->at + site->length)) != 0)
        return err;
    *entry = chunk.exec;
    return 0;
}

/* The 8 bytes that send the site to `stub`: where the store was, jmp rel32
 * and int3 up to its length (the rest of the store, never run); around it,
 * the bytes that were there. */
static uint64_t patched_window(const struct store_site *site, uintptr_t stub)
{
    uint64_t before;
    memcpy(&before, site->original, WINDOW);
    return code_jmp_window_bytes(site->window, before, site->at, stub, site->length);
}

int store_sites_apply(struct store_patch *p, uint32_t id, const char *name, store_handler_fn *handler,
                      size_t expected)
{
    if (p->applied)
        return EEXIST;
    if (p->count == 0 || (expected && p->count != expected))
        return ENOENT;
    for (size_t i = 0; i < p->count; i++) {
        const struct store_site *s = &p->sites[i];
        if (s->length < JMP_REL32_LENGTH || memcmp((const void *)s->window, s->original, WINDOW))
            return EINVAL;
    }
    /* Every stub first: a site is patched only once all have one. */
    size_t bytes = p->count * sizeof(struct code_patch);
    struct code_patch *patches = pages_alloc(bytes);
    if (!patches)
        return ENOMEM;
    int err = 0;
    for (size_t i = 0; i < p->count && !err; i++) {
        uintptr_t stub;
        err = make_stub(p, &p->sites[i], id, name, handler, &stub);
        if (!err) {
            patches[i] = (struct code_patch){ .at = p->sites[i].window, .width = WINDOW,
                                              .after = patched_window(&p->sites[i], stub) };
            memcpy(&patches[i].before, p->sites[i].original, WINDOW);
        }
    }
    if (!err && (err = code_patch_apply(patches, p->count)) == 0) {
        p->applied = 1;
        for (size_t i = 0; i < p->count; i++)
            p->sites[i].patched = patches[i].after;   /* what restoring expects to find */
    }
    pages_free(patches, bytes);
    return err;
}

int store_sites_restore(struct store_patch *p)
{
    if (!p->applied)
        return 0;
    size_t bytes = p->count * sizeof(struct code_patch);
    struct code_patch *patches = pages_alloc(bytes);
    if (!patches)
        return ENOMEM;
    for (size_t i = 0; i < p->count; i++) {
        patches[i] = (struct code_patch){ .at = p->sites[i].window, .width = WINDOW,
                                          .after = p->sites[i].patched };
        memcpy(&patches[i].before, p->sites[i].original, WINDOW);
    }
    int err = code_patch_undo(patches, p->count);
    if (!err)
        p->applied = 0;
    pages_free(patches, bytes);
    return err;
}

void store_sites_free(struct store_patch *p)
{
    pages_free(p->sites, p->bytes);
    memset(p, 0, sizeof *p);
}
