/* Where a function's code and a static variable are, from DWARF (libdwarf): its own copy
 * (DW_TAG_subprogram with an address) and every instance inlined into
 * another function (DW_TAG_inlined_subroutine whose abstract origin names
 * it), as file address ranges. For hooks on code a compiler copied into its
 * callers. Reads files and calls malloc: not for hooks. */
#ifndef MEMPROF_OBJFILE_INLINES_H
#define MEMPROF_OBJFILE_INLINES_H
#include <stddef.h>
#include <stdint.h>

/* Called for each range [start, end); non-zero stops. `inlined`: an
 * inlined instance, else the function's own copy. */
typedef int elf_span_fn(void *ctx, uint64_t start, uint64_t end, int inlined);

/* 0, or -1 with `err` set (no DWARF). */
int elf_function_spans(const char *path, const char *name, elf_span_fn *each, void *ctx, char *err, size_t errlen);
/* The address of a static variable (DW_TAG_variable whose DW_AT_location is
 * one DW_OP_addr): a file address. 0, or -1 with `err` set. */
int elf_variable_address(const char *path, const char *name, uint64_t *address, char *err, size_t errlen);
#endif
