/* The frame layout of a stub, range by range, for the JIT symfile
 * (jit_symfile.h): the emitter books each instruction that moves rsp or rbp
 * (emit_frame_begin); this turns its books into the symfile's ranges. */
#ifndef MEMPROF_HOOK_STUB_FRAMES_H
#define MEMPROF_HOOK_STUB_FRAMES_H
#include "jit.h"
#include "jit_symfile.h"
#include "pool.h"
#include "../arch/x86_64/emit.h"
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define STUB_MAX_RANGES 16

struct stub_frames {
    uintptr_t start;                  /* the stub's first byte */
    struct jit_symfile_range r[STUB_MAX_RANGES];
    size_t count;
};

/* The emitter's books for the stub just written (emit_frame_begin at
 * f->start, up to here), as the JIT symfile's ranges, with the stub's rule
 * for its return address. An emitter that could not keep them has its
 * error set already. */
static inline void stub_frames_from_books(struct stub_frames *f, struct emitter *e, enum jit_ra_rule ra)
{
    size_t n = emit_frame_end(e);
    f->count = 0;
    for (size_t i = 0; i < n && i < STUB_MAX_RANGES; i++) {
        const struct emit_frame *b = &e->frames[i];
        f->r[f->count++] = (struct jit_symfile_range){
            .start = b->start, .end = b->end, .ra_rule = (uint8_t)ra,
            .cfa_reg = b->cfa_reg == RBP ? JIT_DWARF_RBP : JIT_DWARF_RSP, .cfa_offset = b->cfa_offset,
            .rbp_rule = (uint8_t)(b->rbp_saved ? JIT_RBP_AT_CFA : JIT_RBP_SAME), .rbp_offset = b->rbp_offset,
        };
    }
}

/* A stub that goes back into the middle of a function (an inline site's:
 * store and entry stubs), written in `e` from f->start: its books made its
 * frames, then finished, published in `chunk` and registered for GDB as
 * "memprof KIND stub for NAME" resuming at `resume`. 0, or ERANGE (a target
 * out of reach), ENOMEM, or the pool's errno. */
static inline int stub_publish_resuming(struct emitter *e, struct stub_frames *f, const struct code_chunk *chunk,
                                        const char *kind, const char *name, uintptr_t resume)
{
    stub_frames_from_books(f, e, JIT_RA_RESUME);
    if (emit_finish(e))
        return e->error == EMIT_OUT_OF_REACH ? ERANGE : ENOMEM;
    int err = pool_publish(chunk, e->len);
    if (err)
        return err;
    char text[160];
    snprintf(text, sizeof text, "memprof %s stub for %s", kind, name && *name ? name : "?");
    jit_add_resuming_stub(chunk->region, chunk->cookie, chunk->exec, e->len, text, f->r, f->count, resume);
    return 0;
}

#endif
