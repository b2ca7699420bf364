/* Allocation wrappers: code that allocates on its caller's behalf (strdup,
 * asprintf, getline, Ruby's ruby_xmalloc family, GLib's g_malloc family,
 * all of libstdc++, and the functions the user names). An allocation made
 * there is charged to the first caller outside them: the heap tracer
 * unwinds that far for these allocations only. */
#ifndef MEMPROF_TRACE_HEAP_WRAPPERS_H
#define MEMPROF_TRACE_HEAP_WRAPPERS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The wrappers' code as sorted address ranges, built whole and published by
 * one pointer store (described for a reader of a core: memprof_tables). */
#define HEAP_WRAPPER_RANGES 8192
struct heap_wrapper_range { uintptr_t start, end; };
struct heap_wrapper_table { size_t count; struct heap_wrapper_range ranges[HEAP_WRAPPER_RANGES]; };
extern struct heap_wrapper_table *heap_wrappers_published;

/* Find the wrappers' code in the objects loaded now: the built-in ones and
 * `patterns` (comma-separated function names or fnmatch globs; NULL: none),
 * with the functions they call directly. Before the hooks go in, or with
 * them in (the new table replaces the old at once). Reads files and calls
 * malloc. False with `message` set when a pattern names no function (the
 * others still count). */
bool heap_wrappers_build(const char *patterns, char *message, size_t size);
/* Is `pc` in a wrapper's code? No malloc, no lock: callable from a hook. */
bool heap_wrappers_contain(uintptr_t pc);
/* Changes each time another table is published: an answer of
 * heap_wrappers_contain kept from before is stale. */
extern uint64_t heap_wrappers_generations;
static inline uint64_t heap_wrappers_generation(void)
{
    return __atomic_load_n(&heap_wrappers_generations, __ATOMIC_ACQUIRE);
}
/* The patterns of the last build ("" when none): for the report's header. */
const char *heap_wrappers_patterns(void);
#endif
