/* memprof's JIT symfiles, checked and indexed for the GDB reader (and for the
 * fuzz harness, which runs the same code without GDB). Format: libprof's
 * hook/jit_symfile.h, doc/jit-symfile.md. */
#ifndef MEMPROF_PLUGIN_SYMFILE_H
#define MEMPROF_PLUGIN_SYMFILE_H
#include "hook/jit_symfile.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A symfile that passed every check, copied into the reader's memory: stubs
 * sorted, each with its ranges covering it, names NUL-terminated. */
struct symfile {
    struct jit_symfile_header header;
    struct jit_symfile_stub *stubs;      /* header.stub_count */
    struct jit_symfile_range *ranges;    /* header.range_count */
    char *strings;                       /* header.strings_size */
};

/* Check `size` bytes at `data` and copy them into *out (free with
 * symfile_free). false, with the reason in `why`, for anything that is not a
 * well-formed memprof symfile of a known version. */
bool symfile_parse(const void *data, size_t size, struct symfile *out, char *why, size_t why_size);
void symfile_free(struct symfile *s);

/* The stub holding `pc`, and the frame range for it; NULL when none. */
const struct jit_symfile_stub *symfile_stub_at(const struct symfile *s, uint64_t pc);
const struct jit_symfile_range *symfile_range_at(const struct symfile *s, const struct jit_symfile_stub *stub,
                                                 uint64_t pc);
#endif
