/* memprof's runtime: the C API of libmemprof.so.
 *
 * Every function is safe to call from GDB with the process stopped anywhere:
 * none calls malloc, and none waits on a lock (a held lock is reported as
 * MEMPROF_BUSY). Every call that can fail returns a status and leaves its
 * text in memprof_text(): what it produced, or one line saying what was done
 * or why not. Statuses are stable numbers; doc/manual.md lists them. The
 * debugger's side (threads, attaching) is in memprof_debugger.h. */
#ifndef MEMPROF_H
#define MEMPROF_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum memprof_status {
    MEMPROF_OK = 0,
    MEMPROF_NOT_RUBY = 1,     /* no Ruby VM in this process */
    MEMPROF_BUSY = 2,         /* a thread is inside a memprof hook */
    MEMPROF_IN_GC = 3,        /* the Ruby GC is running */
    MEMPROF_HOOK_FAILED = 4,  /* a GOT slot or some code could not be patched */
    MEMPROF_NO_MEMORY = 5,
    MEMPROF_IO_ERROR = 6,     /* the report could not be written */
    MEMPROF_BAD_ARGUMENT = 7, /* a value out of range, a spec that names nothing */
};

/* What memprof_start, memprof_stop and memprof_running speak of (bits).
 * Starting a tracer also follows threads. */
enum memprof_tracer {
    MEMPROF_RUBY = 1,     /* live Ruby objects by file:line:Class */
    MEMPROF_HEAP = 2,     /* live C heap blocks by call site */
    MEMPROF_THREADS = 4,  /* the thread registry (memprof_debugger.h) */
};

int memprof_start(int tracers);
int memprof_stop(int tracers);
int memprof_running(void);   /* the tracers recording now */
int memprof_reset(void);     /* forget the Ruby objects recorded */

/* Where a Ruby allocation is attributed. */
enum memprof_site {
    MEMPROF_SITE_NEAREST = 0, /* the nearest Ruby frame, as ObjectSpace does */
    MEMPROF_SITE_USER = 1,    /* the first frame outside gems, stdlib, <internal:> */
};
/* How Ruby objects recorded from now on are attributed: `site`, `frames`
 * Ruby frames from there (1-64), 1 in `sample` recorded (1: all; counts are
 * then scaled). A new sampling rate forgets what was recorded. */
int memprof_configure(int site, int frames, unsigned sample);
/* A new epoch: reports with since = the returned value show only objects
 * made from now on (Memprof.track). */
unsigned memprof_epoch_begin(void);
/* Leave rows whose site is in `file` out of every report (the Ruby API hides
 * its own files this way). MEMPROF_NO_MEMORY when the list is full. */
int memprof_hide_file(const char *file);

/* The reports. */
enum memprof_report_kind {
    MEMPROF_REPORT_AUTO = 0,      /* RUBY_JSON in a Ruby process, else HEAP_PPROF
                                     if the heap is traced, else ALL */
    MEMPROF_REPORT_RUBY = 1,      /* live Ruby objects: "count file:line:Class" */
    MEMPROF_REPORT_HEAP = 2,      /* live C heap blocks by call site, largest bytes
                                     first: "count bytes peak_bytes total_count
                                     total_bytes site object+offset" after "#"
                                     lines (`memprof heap-table` names the sites) */
    MEMPROF_REPORT_HEAP_PPROF = 3,/* the C heap as google-pprof's heap profile */
    MEMPROF_REPORT_RUBY_JSON = 4, /* the live Ruby objects, one JSON object per
                                     line in ObjectSpace.dump_all's schema */
    MEMPROF_REPORT_THREADS = 5,   /* the thread registry as a table */
    MEMPROF_REPORT_STATUS = 6,    /* what is hooked, the counts, the memory used */
    MEMPROF_REPORT_ALL = 7,       /* STATUS, RUBY with bytes, HEAP and THREADS */
    MEMPROF_REPORT_HEAP_PEAK = 8, /* HEAP as it was when live bytes were highest,
                                     with a "# peak" line (MEMPROF_PEAK=1) */
};
enum memprof_report_flag {
    MEMPROF_REPORT_BYTES = 1,      /* RUBY: a bytes column (slot + what it owns) */
    MEMPROF_REPORT_SORT_BYTES = 2, /* RUBY: largest bytes first (else count) */
    MEMPROF_REPORT_BY_THREAD = 4,  /* HEAP: a row per site and allocating thread,
                                      each followed by "  thread N" */
    MEMPROF_REPORT_FREED_SITES = 8,/* HEAP: also the sites whose blocks are all
                                      freed (count 0), for their totals */
    MEMPROF_REPORT_ALLOCATED = 16, /* RUBY: an allocated column: the objects made
                                      at the row since recording started */
    MEMPROF_REPORT_SORT_ALLOCATED = 32, /* RUBY: most allocated first (and the column) */
    MEMPROF_REPORT_GC = 64,        /* RUBY: a full GC first, where the calling thread
                                      may run one (it holds the GVL, outside any hook
                                      and the GC): the rows are what it retains */
    MEMPROF_REPORT_STRINGS = 128,  /* RUBY: after the rows, each live String's site
                                      and value (64 bytes at most, escaped) */
    MEMPROF_REPORT_UNSORTED = 256, /* RUBY: rows in no order, for a reader that
                                      sorts them itself (memprof run --group) */
};
/* A report of `kind`: with `flags`, the first `top` rows (0: all), Ruby
 * objects of epoch `since` or later (0: all), rows containing `filter`
 * (NULL: all). Into the file `path` (mode 0600, temp file + rename, never
 * through a symbolic link; MEMPROF_IO_ERROR), or with path NULL as
 * memprof_text(). */
int memprof_report(int kind, int flags, unsigned long top, unsigned since, const char *filter,
                   const char *path);

/* Who allocated the object or block at `addr`: memprof_text() is
 * "file:line:Class" (and "  from file:line" lines), the heap block's site,
 * or a line starting "memprof: no allocation recorded". */
int memprof_where(uintptr_t addr);

/* A custom allocator's blocks in the heap report: hook the function `spec`
 * names, "FUNCTION size=argN ptr=ret" (an allocator), "FUNCTION ptr=argN"
 * (its free), "FUNCTION ptr=argN size=argM" (memory handed to it), and the
 * --calls and --stores forms of doc/manual.md; arguments count from 0.
 * Starts the heap tracer. MEMPROF_BAD_ARGUMENT for a bad spec or an unknown
 * function. */
int memprof_hook(const char *spec);
/* Every memprof_hook hook removed, the code as it was (MEMPROF_HOOK_FAILED
 * if some code changed since). */
int memprof_unhook(void);
/* Allocation wrappers besides the built-in ones (strdup, operator new, std::
 * code, ruby_xmalloc, g_malloc...): comma-separated function names or globs
 * whose allocations are charged to their callers; "" for none. Used from the
 * heap tracer's next start, or at once if it runs. MEMPROF_BAD_ARGUMENT when
 * a pattern names no function. */
int memprof_wrappers(const char *patterns);
/* Sample the C heap: record an allocation per `bytes` allocated on average
 * (exponential intervals, as tcmalloc), counts and bytes scaled back in
 * reports; 0 records every one. Before the heap tracer first records: once
 * blocks are recorded, another figure is MEMPROF_BAD_ARGUMENT. */
int memprof_sample_bytes(unsigned long bytes);

/* What the last call produced or said; owned by the runtime, valid until
 * the next call. For MEMPROF_OK without more to say: the state. */
const char *memprof_text(void);
int memprof_last_status(void);

enum memprof_usage_kind {
    MEMPROF_TRACKED_OBJECTS = 0,  /* Ruby records held */
    MEMPROF_TABLE_BYTES = 1,      /* bytes the Ruby tables take */
};
unsigned long memprof_usage(int kind);
const char *memprof_version(void);

#ifdef __cplusplus
}
#endif
#endif
