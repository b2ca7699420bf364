/* What naming an object's addresses found, remembered across runs: one file
 * per object, named by its build-id, in the cache directory the CLI chooses
 * ($XDG_CACHE_HOME/memprof/names, ~/.cache/memprof/names). A file holds the
 * line saying where the names came from (symbolizer_sources: a debug file
 * installed since makes it stale) and, per address, its frames. Read whole
 * and checked (magic, CRC-32, every length) before anything is believed: a
 * damaged or stale file is ignored and written anew. Written as a temporary
 * file renamed over the old one, merged with what another process wrote
 * since it was read; the directory is kept under a bound, the files used
 * longest ago removed first. */
#ifndef MEMPROF_OBJFILE_NAME_CACHE_H
#define MEMPROF_OBJFILE_NAME_CACHE_H
#include "symbolizer.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct name_cache;

/* The names remembered for the object whose build-id is `build_id` (hex),
 * named from `sources`; NULL when nothing can be remembered (no memory). */
struct name_cache *name_cache_open(const char *dir, const char *build_id, const char *sources);
/* The frames remembered at `addr` (at most `max`; strings owned by the
 * cache), or 0 when the address is not remembered. */
size_t name_cache_get(struct name_cache *c, uint64_t addr, struct symbol_info *frames, size_t max);
/* Remember `n` frames at `addr` (copied). */
void name_cache_put(struct name_cache *c, uint64_t addr, const struct symbol_info *frames, size_t n);
/* Written back if anything was put, then freed. */
void name_cache_close(struct name_cache *c);
/* The directory's bound in bytes (the files used longest ago go first). */
#define NAME_CACHE_MAX_BYTES (64u << 20)
#endif
