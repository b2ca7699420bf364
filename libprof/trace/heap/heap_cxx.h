/* C++'s operator new charged to its caller (heap_cxx.c), and what heap_hooks.c
 * gives it for that: a charge for the next allocation of this thread. */
#ifndef MEMPROF_TRACE_HEAP_CXX_H
#define MEMPROF_TRACE_HEAP_CXX_H
#include <stdbool.h>
#include <stddef.h>

/* Hook every operator new of libstdc++, if the process has it (true), or
 * take the hooks out. */
bool heap_cxx_start(void);
void heap_cxx_stop(void);

/* The next allocation of this thread of between `min` and `max` bytes is
 * charged to `site`. False when a charge is already set (an inner new). */
bool heap_charge_begin(void *site, size_t min, size_t max);
void heap_charge_end(void);
#endif
