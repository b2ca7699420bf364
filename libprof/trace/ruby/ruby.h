/* The Ruby tracer: live Ruby objects by file:line:Class.
 * Active only in a process that has a Ruby VM, found at run time. */
#ifndef MEMPROF_TRACE_RUBY_H
#define MEMPROF_TRACE_RUBY_H
#include "../../memprof.h"
#include "../../util/out.h"
#include <stdbool.h>
#include <stdint.h>

/* Where an allocation is attributed: the nearest Ruby frame, or the first
 * frame in the user's own code (not a gem, the standard library or the VM's
 * <internal:...> code); `frames` Ruby frames from there. */
enum ruby_site_mode { RUBY_SITE_NEAREST = 0, RUBY_SITE_USER = 1 };

struct ruby_config {
    enum ruby_site_mode site;
    int frames;        /* 1..RUBY_MAX_FRAMES */
    unsigned sample;   /* record 1 in `sample` allocations (1: all) */
};

/* Whether a report's objects are what a full GC retains (its header says). */
enum ruby_gc_state {
    RUBY_GC_NOT_ASKED = 0,   /* none asked for (--no-gc, GDB, a core): garbage included */
    RUBY_GC_RAN,             /* one ran just before */
    RUBY_GC_NOT_HERE,        /* asked for, but this thread may not run one now */
    RUBY_GC_NONE,            /* this Ruby exports no rb_gc */
    RUBY_GC_DISABLED,        /* the program disabled the GC (GC.disable): none ran */
};

/* Report selection and layout. */
enum ruby_sort { RUBY_SORT_COUNT = 0, RUBY_SORT_BYTES = 1, RUBY_SORT_ALLOCATED = 2 };
struct ruby_report_options {
    enum ruby_sort sort;
    bool bytes;           /* show a bytes column */
    bool allocated;       /* show an allocated column (objects made at the row) */
    enum ruby_gc_state gc;
    const char *when;     /* the header's "at exit of" (NULL: "in") */
    bool strings;         /* after the rows, each live String's site and value */
    bool unsorted;        /* the rows in no order (the reader sorts them) */
    unsigned long top;    /* 0: every row */
    const char *filter;   /* NULL, or rows whose "file:line:Class" contains it */
    uint32_t since;       /* only objects made in this epoch or later */
};

/* Does this process have a Ruby VM (resolves the API on first call)? */
bool ruby_tracer_available(void);
/* Has the VM been created (is Ruby code running, or about to)? */
bool ruby_tracer_vm_running(void);
/* Hook the allocators and record. `at_exit` runs from a Ruby end proc, while
 * the heap is still whole, once Ruby code has started. */
enum memprof_status ruby_tracer_start(void (*at_exit)(void));
/* Stop recording; the records stay, and so does the watch that drops those of
 * heap pages the GC gives back. */
void ruby_tracer_stop(void);
/* Stop recording as the process ends: the hooks stay in place (they record
 * nothing now), as restoring their slots would cost a pass for nothing. */
void ruby_tracer_stop_at_exit(void);
/* Stop, remove every hook and forget the records (memprof_detach); busy,
 * with nothing changed, while a thread inside a hook holds the tables. */
enum memprof_status ruby_tracer_detach(void);
bool ruby_tracer_running(void);
enum memprof_status ruby_tracer_reset(void);
/* `job(data)` at the VM's next safe point (a postponed job: holding the
 * GVL, outside the GC, where a GC may run), asked for from any thread of the
 * VM's at any time. `stopped`: the process is stopped (GDB's call), and the
 * next allocation recorded asks again, from a thread that runs Ruby code,
 * for the job to run soon even when the calling thread is blocked. False: no
 * VM, not a thread of it, or Ruby's queue is full. */
bool ruby_tracer_postpone(void (*job)(void *), void *data, bool stopped);
/* The same from a thread that is not the VM's (serve.c's), while recording:
 * the next allocation recorded asks for it. Call again while waiting (an
 * epoch begun meanwhile may hide the request). False: no VM, not
 * recording, or another job waits. */
bool ruby_tracer_postpone_from_outside(void (*job)(void *), void *data);
/* A full GC, swept at once, if this thread may run one now: it holds the
 * GVL, and is in no hook and not in the GC. Never with a report's lock held. */
enum ruby_gc_state ruby_tracer_collect(void);
/* Write the table of live objects. Allocation-free and lock-free (try-lock):
 * callable from GDB with the process stopped anywhere. */
enum memprof_status ruby_tracer_report(struct out *o, const struct ruby_report_options *opt);
/* Leave rows whose site is in `file` out of reports (the Ruby API's own
 * files). False when the list is full. */
bool ruby_tracer_hide_file(const char *file);
/* Where the object at `addr` was recorded: "file:line:Class" and its callers,
 * or MEMPROF_NOT_RUBY / MEMPROF_BUSY; *found is false when it is not recorded. */
/* The live objects recorded, as JSON lines in ObjectSpace.dump_all's schema. */
enum memprof_status ruby_tracer_dump(struct out *o);
enum memprof_status ruby_tracer_where(struct out *o, uintptr_t addr, bool *found);
/* Attribution and sampling for what is recorded from now on. A new sampling
 * rate forgets what was recorded (counts are scaled by one rate). */
enum memprof_status ruby_tracer_configure(const struct ruby_config *c);
void ruby_tracer_config(struct ruby_config *c);
/* Start a new epoch; reports can be limited to objects made since. */
uint32_t ruby_tracer_new_epoch(void);
/* Records held, and bytes used by the tables (approximate: no lock). */
void ruby_tracer_usage(unsigned long *objects, unsigned long *bytes);
/* After fork, in the child. */
void ruby_tracer_after_fork(void);
#endif
