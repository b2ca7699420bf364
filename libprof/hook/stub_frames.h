/* The frame layout of a stub as it is emitted, range by range, for the JIT
 * symfile (jit_symfile.h): each instruction that moves rsp or rbp starts a
 * new range. */
#ifndef MEMPROF_HOOK_STUB_FRAMES_H
#define MEMPROF_HOOK_STUB_FRAMES_H
#include "jit_symfile.h"
#include <stddef.h>
#include <stdint.h>

#define STUB_MAX_RANGES 16

struct stub_frames {
    uintptr_t start;                  /* the stub's first byte */
    struct jit_symfile_range r[STUB_MAX_RANGES];
    size_t count;
};

/* From `here` on (to the next one, or the stub's end), the frame is so. */
static inline void stub_frame_from(struct stub_frames *f, uintptr_t here, uint8_t cfa_reg, int32_t cfa_offset,
                                   enum jit_ra_rule ra, enum jit_rbp_rule rbp, int32_t rbp_offset)
{
    uint32_t at = (uint32_t)(here - f->start);
    if (f->count > 0)
        f->r[f->count - 1].end = at;
    if (f->count < STUB_MAX_RANGES)
        f->r[f->count++] = (struct jit_symfile_range){ .start = at, .cfa_reg = cfa_reg, .ra_rule = (uint8_t)ra,
                                                       .rbp_rule = (uint8_t)rbp, .cfa_offset = cfa_offset,
                                                       .rbp_offset = rbp_offset };
}

/* The last range ends at the stub's end. */
static inline void stub_frames_end(struct stub_frames *f, uintptr_t end)
{
    if (f->count > 0)
        f->r[f->count - 1].end = (uint32_t)(end - f->start);
}
#endif
