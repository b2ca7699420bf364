/* The Ruby line running when a C heap block is allocated, in a process with
 * a Ruby VM: a leak in an extension shows up against the Ruby line that
 * caused it. Lines are interned into small tokens (0: no Ruby line). */
#ifndef MEMPROF_TRACE_HEAP_RUBY_H
#define MEMPROF_TRACE_HEAP_RUBY_H
#include "../../util/out.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A thread's cache of recent lines, kept by the caller (the heap tracer's
 * per-thread ring): no TLS of its own, so memprof still fits in the static
 * TLS left for a library loaded into a running process. */
#define HEAP_RUBY_CACHE 64
struct heap_ruby_cache {
    struct { const void *pc; size_t gc_count; uint32_t token; } entries[HEAP_RUBY_CACHE];
};

/* The lines, interned: a token is a site + 1 (store/sites.h). */
struct site_table;
extern struct site_table heap_ruby_lines;

/* Call `fn` from the VM's end procs (after the program's at_exit handlers,
 * before the VM's teardown), once a Ruby frame was seen. */
void heap_ruby_at_program_end(void (*fn)(void));
/* Look for a Ruby VM; lines are recorded from then on when there is one. */
void heap_ruby_enable(void);
/* Whether one was found: without, the heap hooks never ask for a line. */
extern bool heap_ruby_found;
static inline __attribute__((always_inline)) bool heap_ruby_enabled(void)
{
    return __atomic_load_n(&heap_ruby_found, __ATOMIC_RELAXED);
}
/* The token of the Ruby line this thread is running, or 0. Never allocates,
 * never waits on a lock. */
uint32_t heap_ruby_line(struct heap_ruby_cache *cache);
/* "file:line" of the Ruby line this thread is running, written to `o`;
 * false (nothing written) when there is none or the GC runs. Not interned:
 * for a thread's creation site. */
bool heap_ruby_current_site(struct out *o);
/* Hold the line table still while a report names tokens (a try-lock: false
 * when a hook holds it). */
bool heap_ruby_lock_for_report(void);
void heap_ruby_unlock(void);
/* "file:line" for a token. */
void heap_ruby_write(struct out *o, uint32_t token);
size_t heap_ruby_bytes(void);
/* In the child of a fork. */
void heap_ruby_after_fork(void);
#endif
