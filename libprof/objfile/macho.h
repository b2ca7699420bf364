/* Mach-O files (64-bit, and universal files holding them), read by hand
 * with every offset and count checked against the file before use: the
 * seeds' other format. What memprof reads:
 *   - the load commands, each inside the file and inside sizeofcmds;
 *   - the sections of each LC_SEGMENT_64;
 *   - LC_SYMTAB's symbols, split by LC_DYSYMTAB into local, external
 *     (defined) and undefined, with the dylib an undefined one is expected
 *     from (the two-level namespace's library ordinal);
 *   - the indirect symbol table, mapped onto the sections it serves
 *     (__stubs, __la_symbol_ptr, __got: a section's reserved1 is its first
 *     entry there, reserved2 a stub's size);
 *   - the dyld bind, weak bind and lazy bind opcodes of LC_DYLD_INFO(_ONLY).
 * Chained fixups (LC_DYLD_CHAINED_FIXUPS, threaded binds) and 32-bit or
 * big-endian files are refused by name. Used through binary.h. */
#ifndef MEMPROF_OBJFILE_MACHO_H
#define MEMPROF_OBJFILE_MACHO_H
#include "binary.h"
#include <stddef.h>
#include <stdint.h>

/* Whether the first bytes of a file are a Mach-O or universal magic (of
 * any width or byte order: the reader refuses what it does not read). */
bool macho_is(const uint8_t *bytes, size_t size);
/* Read the file's bytes (`size` of them, kept by the caller until
 * binary_close) into `b`: for a universal file the slice of `arch` ("x86_64",
 * "arm64", ...; NULL: x86_64 if there is one, else the first). 0, or -1
 * with a one-line `err`. */
int macho_read(struct binary *b, const uint8_t *bytes, size_t size, const char *arch, char *err, size_t errlen);
#endif
