/* The Ruby tracer: live Ruby objects by file:line:Class.
 * Active only in a process that has a Ruby VM, found at run time. */
#ifndef MEMPROF_TRACE_RUBY_H
#define MEMPROF_TRACE_RUBY_H
#include "../util/out.h"
#include <stdbool.h>

enum ruby_status {
    RUBY_OK = 0,
    RUBY_NOT_RUBY,      /* no Ruby VM in this process */
    RUBY_BUSY,          /* a hook holds the tracer's lock */
    RUBY_IN_GC,         /* the GC is running: heap flags are in flux */
    RUBY_HOOK_FAILED,   /* a GOT slot could not be written */
    RUBY_NO_MEMORY,
};

/* Does this process have a Ruby VM (resolves the API on first call)? */
bool ruby_tracer_available(void);
/* Hook the allocators and record. `at_exit` runs from a Ruby end proc, while
 * the heap is still whole, once Ruby code has started. */
enum ruby_status ruby_tracer_start(void (*at_exit)(void));
void ruby_tracer_stop(void);
bool ruby_tracer_running(void);
enum ruby_status ruby_tracer_reset(void);
/* Write the table of live objects. Allocation-free and lock-free (try-lock):
 * callable from GDB with the process stopped anywhere. */
enum ruby_status ruby_tracer_report(struct out *o);
/* After fork, in the child. */
void ruby_tracer_after_fork(void);
#endif
