/* memprof's runtime: the C API of libmemprof.so.
 *
 * Every function is safe to call from GDB with the process stopped anywhere:
 * none calls malloc, and none waits on a lock (a held lock is reported as
 * MEMPROF_BUSY). Statuses are stable numbers; doc/manual.md lists them. */
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
    MEMPROF_HOOK_FAILED = 4,  /* a GOT slot could not be patched */
    MEMPROF_NO_MEMORY = 5,
    MEMPROF_IO_ERROR = 6,     /* the report could not be written */
    MEMPROF_BAD_ARGUMENT = 7, /* a value out of range */
};

/* Where an allocation is attributed (memprof_configure). */
enum memprof_site {
    MEMPROF_SITE_NEAREST = 0, /* the nearest Ruby frame, as ObjectSpace does */
    MEMPROF_SITE_USER = 1,    /* the first frame outside gems, stdlib, <internal:> */
};

/* Report flags. */
enum {
    MEMPROF_REPORT_BYTES = 1,      /* add a bytes column (slot + what the object owns) */
    MEMPROF_REPORT_SORT_BYTES = 2, /* largest bytes first (default: largest count) */
};

int memprof_start(void);   /* hook the allocators and record */
int memprof_stop(void);    /* stop recording, restore every patched slot */
int memprof_reset(void);   /* forget what was recorded */
int memprof_running(void); /* 1 while recording */

/* How what is recorded from now on is attributed: `site` (enum memprof_site),
 * `frames` Ruby frames from there (1-64), and 1 in `sample` allocations
 * recorded (1: all; counts are then scaled). A new sampling rate forgets what
 * was recorded. */
int memprof_configure(int site, int frames, unsigned sample);
/* A new epoch: reports with since = the returned value show only objects
 * made from now on (Memprof.track). */
unsigned memprof_epoch_begin(void);

/* Write the live-object table to `fd`. */
int memprof_report(int fd);
/* The same with options: MEMPROF_REPORT_* flags, the first `top` rows (0: all),
 * objects of epoch `since` or later (0: all), rows containing `filter` (NULL: all). */
int memprof_report_ex(int fd, int flags, unsigned long top, unsigned since, const char *filter);
/* Write the table to `path`: mode 0600, temp file + rename, never through a
 * symbolic link (MEMPROF_IO_ERROR; memprof_strerror says why). */
int memprof_report_file(const char *path, int flags, unsigned long top, unsigned since,
                        const char *filter);
/* The table (or, on failure, a one-line message) as text owned by the
 * runtime, valid until the next call; memprof_last_status() tells which. */
const char *memprof_report_text(void);
const char *memprof_report_text_ex(int flags, unsigned long top, unsigned since,
                                   const char *filter);
int memprof_last_status(void);

/* Who allocated the object at `addr`: "file:line:Class" (and its callers, one
 * "  from file:line" line each), or a one-line message starting "memprof: ".
 * Text owned by the runtime, valid until the next call. */
const char *memprof_where(uintptr_t addr);

/* The C heap (MEMPROF_HEAP=1 or memprof_heap_start()): live blocks by call
 * site, largest bytes first, the first `top` rows (0: all), one line each:
 * "count bytes peak_bytes total_count total_bytes site object+offset" after a
 * "#" header line; `memprof symbolize` names the sites. */
int memprof_heap_start(void);
int memprof_heap_stop(void);

/* A custom allocator's blocks in the heap report: hook the function `spec`
 * names, "FUNCTION size=argN ptr=ret" (an allocator), "FUNCTION ptr=argN"
 * (its free) or "FUNCTION ptr=argN size=argM" (memory handed to it), with
 * arguments counted from 0. Starts the heap tracer. MEMPROF_BAD_ARGUMENT for
 * a bad spec or an unknown function; memprof_hook_message() says what was
 * done or why not, in one line. */
int memprof_hook(const char *spec);
/* Remove every memprof_hook hook, the patched code back as it was
 * (MEMPROF_HOOK_FAILED if some code changed since); memprof_hook_message()
 * says how many. */
int memprof_unhook(void);
const char *memprof_hook_message(void);
/* For GDB: memprof_hook on the text GDB wrote into memprof_gdb_text. */
#define MEMPROF_GDB_TEXT_SIZE 1024
extern char memprof_gdb_text[MEMPROF_GDB_TEXT_SIZE];
int memprof_hook_gdb_text(void);
/* Allocation wrappers besides the built-in ones (strdup, operator new,
 * std:: code, ruby_xmalloc, g_malloc...): comma-separated function names or
 * globs whose allocations are charged to their callers; "" for none. Used
 * from the heap tracer's next start, or at once if it is running.
 * MEMPROF_BAD_ARGUMENT when a pattern names no function; the message (as
 * memprof_hook_message) says which. memprof_wrappers_gdb_text: on
 * memprof_gdb_text. */
int memprof_wrappers(const char *patterns);
int memprof_wrappers_gdb_text(void);
int memprof_heap_report(int fd, unsigned long top);
const char *memprof_heap_report_text(unsigned long top);
/* With MEMPROF_HEAP_BY_THREAD in `flags`: a row per site and allocating
 * thread, each followed by "  thread N" (N as in the "# thread" lines). */
#define MEMPROF_HEAP_BY_THREAD 1
/* With MEMPROF_HEAP_PPROF: google-pprof's heap profile format instead
 * (`google-pprof --text PROGRAM FILE`), every row, with the memory map. */
#define MEMPROF_HEAP_PPROF 2
/* The heap report (flags as above) into `path`, as memprof_report_file. */
int memprof_heap_report_file(const char *path, int flags);
int memprof_heap_report_ex(int fd, int flags, unsigned long top);
const char *memprof_heap_report_text_ex(int flags, unsigned long top);

/* Leave rows whose site is in `file` out of every report (the Ruby API hides
 * its own files this way). MEMPROF_NO_MEMORY when the list is full. */
int memprof_hide_file(const char *file);

/* A one-line message for a status (for MEMPROF_OK: the current state). */
const char *memprof_strerror(int status);
const char *memprof_version(void);

/* Objects tracked now, and the bytes the runtime's tables take (for
 * memprof-status and the benchmarks' bytes-per-object figure). */
unsigned long memprof_tracked_objects(void);
unsigned long memprof_table_bytes(void);


/* --- threads (memprof_threads_start; doc/manual.md "Threads") ---------------
 * A record per thread, in the process, for debuggers to read: the layout is
 * fixed (MEMPROF_THREAD_RECORD_VERSION changes with it). */
#define MEMPROF_THREAD_RECORD_VERSION 1
enum memprof_thread_state {
    MEMPROF_THREAD_UNUSED = 0,
    MEMPROF_THREAD_STARTING = 1,  /* pthread_create called, not yet running */
    MEMPROF_THREAD_RUNNING = 2,
    MEMPROF_THREAD_EXITED = 3,
    MEMPROF_THREAD_FAILED = 4,    /* pthread_create failed */
};
struct memprof_thread {
    uint32_t number;              /* 1, 2, ... in the order memprof saw them */
    int32_t tid;                  /* 0 until it runs */
    int32_t creator_tid;          /* 0: running before memprof started */
    uint32_t state;               /* enum memprof_thread_state */
    uint64_t start_routine;       /* what pthread_create was given */
    uint64_t call_site;           /* the return address of that call */
    uint64_t stack_base, stack_size;   /* lowest address and bytes; 0 unknown */
    uint64_t allocations, allocated_bytes;   /* C heap blocks it made (heap tracer) */
    char site[160];               /* "worker.rb:5", or "spawn+0x1f in prog" */
    char name[16];
    uint64_t arg;                 /* what pthread_create was given */
};
/* Chunks of records, reachable from the exported memprof_thread_registry. */
#define MEMPROF_THREAD_CHUNK 256
#define MEMPROF_THREAD_CHUNKS 4096
struct memprof_thread_registry {
    uint32_t version;             /* MEMPROF_THREAD_RECORD_VERSION */
    uint32_t record_size;         /* sizeof (struct memprof_thread) */
    uint32_t count;               /* records handed out */
    uint32_t chunk_size;          /* MEMPROF_THREAD_CHUNK */
    struct memprof_thread *chunks[MEMPROF_THREAD_CHUNKS];
};
extern struct memprof_thread_registry memprof_thread_registry;

/* What memprof_thread_event is told: set a breakpoint there (GDB's
 * memprof-thread-events does), the record is in %rdi on x86-64. */
enum memprof_thread_event_kind { MEMPROF_THREAD_CREATED = 1, MEMPROF_THREAD_DIED = 2 };
struct memprof_thread_event {
    uint32_t version;             /* MEMPROF_THREAD_RECORD_VERSION */
    uint32_t kind;                /* enum memprof_thread_event_kind */
    const struct memprof_thread *thread;
};
/* Called in the new thread before its start routine, and in the thread
 * itself when it exits (after its start routine returned, pthread_exit or
 * cancellation). Does nothing: it is where a debugger stops. */
void memprof_thread_event(const struct memprof_thread_event *event);

/* Follow threads from now on (also started by memprof_start, memprof_attach
 * and MEMPROF_THREADS=1), or no longer. */
int memprof_threads_start(void);
int memprof_threads_stop(void);
/* The registry as a table, as memprof_report_text. */
const char *memprof_threads_text(void);

/* --- attaching (GDB's memprof-attach and memprof-detach) ------------------
 * memprof_attach: in a process the runtime was loaded into by dlopen, start
 * what `what` says (MEMPROF_ATTACH_*): the Ruby tracer, the C heap tracer,
 * and always the thread registry. memprof_detach: stop every tracer, remove
 * every hook (GOT slots, rewritten calls and stores get their bytes back)
 * and leave the runtime inert, its reports still readable. */
enum { MEMPROF_ATTACH_AUTO = 0, MEMPROF_ATTACH_RUBY = 1, MEMPROF_ATTACH_HEAP = 2, MEMPROF_ATTACH_ALL = 3 };
int memprof_attach(int what);
int memprof_detach(void);
/* What is hooked, the counts, the runtime's own memory: several lines. */
const char *memprof_status_text(void);
/* A dump into `path` (mode 0600, temp file + rename, never through a
 * symbolic link), of one kind:
 *   MEMPROF_DUMP_RUBY    the live Ruby objects recorded, one JSON object per
 *                        line in ObjectSpace.dump_all's schema (heapy reads it)
 *   MEMPROF_DUMP_HEAP    the C heap as google-pprof's heap profile
 *   MEMPROF_DUMP_REPORT  the status, the reports and the threads, as text
 *   MEMPROF_DUMP_AUTO    RUBY in a Ruby process, else HEAP if the heap is
 *                        traced, else REPORT */
enum { MEMPROF_DUMP_AUTO = 0, MEMPROF_DUMP_RUBY = 1, MEMPROF_DUMP_HEAP = 2, MEMPROF_DUMP_REPORT = 3 };
int memprof_dump_file(const char *path, int kind);
/* memprof_dump_file into the path GDB wrote into memprof_gdb_text. */
int memprof_dump_gdb_text(int kind);

#ifdef __cplusplus
}
#endif
#endif
