/* What every DWARF reader here needs of libdwarf: opening a file, stepping
 * through its compilation units, and the code ranges of a DIE in each
 * encoding (low_pc/high_pc, DWARF 4 .debug_ranges, DWARF 5 range lists).
 * Reads files and calls malloc: not for hooks. */
#ifndef MEMPROF_OBJFILE_DWARF_WALK_H
#define MEMPROF_OBJFILE_DWARF_WALK_H
#include <libdwarf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Open `path`'s DWARF (its sections read with libelf, compressed ones
 * inflated by it, as libdwarf asks for them), or NULL saying why not in
 * `err`. Close with dwarf_walk_close, which ends `dbg` too. */
struct dwarf_file;
struct dwarf_file *dwarf_walk_open(const char *path, Dwarf_Debug *dbg, char *err, size_t errlen);
void dwarf_walk_close(struct dwarf_file *file);
/* The same, the sections a lookup reads (.debug_line, .debug_abbrev, ...)
 * inflated ahead on a second thread while libdwarf reads the first ones,
 * and .debug_info as far as asked for (below): the CLI's naming; not in a
 * profiled process. */
struct dwarf_file *dwarf_walk_open_ahead(const char *path, Dwarf_Debug *dbg, char *err, size_t errlen);
/* The same with the location lists offered too (.debug_loc, .debug_loclists),
 * which the others leave out: libdwarf reads them all when it starts. */
struct dwarf_file *dwarf_walk_open_locations(const char *path, Dwarf_Debug *dbg, char *err, size_t errlen);
/* Opened with dwarf_walk_open_ahead, .debug_info is inflated only as far
 * as it is asked for, by the caller's thread, before libdwarf reads there:
 * through the unit whose header is at `header`, through the unit holding
 * `offset`, or all of it (streamed with zlib, or all at once with
 * libdeflate when that is less work). False: damaged. Opened otherwise,
 * these do nothing. */
bool dwarf_walk_need_unit(struct dwarf_file *file, uint64_t header);
bool dwarf_walk_need_offset(struct dwarf_file *file, uint64_t offset);
bool dwarf_walk_need_all(struct dwarf_file *file);
/* Before the first lookup: the furthest unit the lookups will read has its
 * header at `header`. One past a quarter of .debug_info has it inflated
 * whole by the thread ahead now, beside the caller's work, rather than
 * streamed when asked for (zlib streams at about 2/5 of libdeflate's speed). */
void dwarf_walk_plan(struct dwarf_file *file, uint64_t header);
/* The little-endian number of `bytes` bytes at `p`. */
uint64_t dwarf_walk_little_endian(const unsigned char *p, size_t bytes);
/* A unit's or set's initial length at `p` (32- or 64-bit DWARF): what follows
 * it, its length in *length and the offsets' size in *offset_size; NULL when
 * it runs past `end`. */
const unsigned char *dwarf_walk_initial_length(const unsigned char *p, const unsigned char *end, uint64_t *length,
                                               size_t *offset_size);
/* The bytes of the section `name` as libdwarf is given them (inflated),
 * valid until dwarf_walk_close; NULL when the file has none. */
const unsigned char *dwarf_walk_section(struct dwarf_file *file, const char *name, size_t *size);
/* The next compilation unit's DIE and DWARF version; false at the end. */
bool dwarf_walk_next_cu(Dwarf_Debug dbg, Dwarf_Die *cu, unsigned *version);
/* A CU's base address for its range lists (its DW_AT_low_pc, else 0). */
uint64_t dwarf_walk_cu_base(Dwarf_Die cu);

typedef void dwarf_range_fn(void *ctx, uint64_t start, uint64_t end);
/* Each non-empty range [start, end) of `die`'s code; how many there were. */
size_t dwarf_walk_ranges(Dwarf_Debug dbg, Dwarf_Die die, uint64_t cu_base, dwarf_range_fn *each, void *ctx);
/* The DIE an attribute (DW_AT_abstract_origin, DW_AT_specification) refers
 * to; the caller deallocates it. */
bool dwarf_walk_ref(Dwarf_Debug dbg, Dwarf_Die die, Dwarf_Half attr_name, Dwarf_Die *target);
/* The same, in `file`'s .debug_info as far as asked for (NULL: dbg's own). */
bool dwarf_walk_ref_in(struct dwarf_file *file, Dwarf_Debug dbg, Dwarf_Die die, Dwarf_Half attr_name,
                       Dwarf_Die *target);
/* Whether `die` is named `name`, or stands for a DIE that is (through
 * DW_AT_abstract_origin or DW_AT_specification, two hops at most). */
bool dwarf_walk_named(Dwarf_Debug dbg, Dwarf_Die die, const char *name);
/* Call each(ctx, copy, function, inlined) for every piece of code of the
 * function `name` under `cu`: its own copy (a DW_TAG_subprogram with code)
 * and each copy inlined into another (DW_TAG_inlined_subroutine), with the
 * concrete function the copy is in (the copy itself for its own). True from
 * `each` stops the walk, and dwarf_walk_copies returns true. */
typedef bool dwarf_copy_fn(void *ctx, Dwarf_Die copy, Dwarf_Die function, bool inlined);
bool dwarf_walk_copies(Dwarf_Debug dbg, Dwarf_Die cu, const char *name, dwarf_copy_fn *each, void *ctx);
#endif
