/* memprof's runtime as a debugger sees it: what GDB's memprof.gdbinit and
 * `memprof threads` read or call besides the C API (memprof.h). The layouts
 * here are read from outside the process: they change only with their
 * version numbers. */
#ifndef MEMPROF_DEBUGGER_H
#define MEMPROF_DEBUGGER_H

#include "memprof.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Text GDB writes by assignment and passes to memprof_hook, memprof_wrappers
 * or memprof_report as their string: a debugger must not make the target
 * call malloc for a string of its own. */
#define MEMPROF_GDB_TEXT_SIZE 1024
extern char memprof_gdb_text[MEMPROF_GDB_TEXT_SIZE];

/* In a process the runtime was loaded into by dlopen: start `tracers`
 * (0: Ruby objects in a Ruby process, else the C heap) and always the thread
 * registry; memprof_text() says what. memprof_detach: stop every tracer,
 * remove every hook (GOT slots, rewritten calls and stores get their bytes
 * back) and leave the runtime inert, its reports still readable. */
int memprof_attach(int tracers);
int memprof_detach(void);

/* A report of `kind` with `flags` (MEMPROF_REPORT_GC: after a full GC) into
 * the file `path` (copied), written at the Ruby VM's next safe point, where a
 * GC may run, by a postponed job: for a debugger, which cannot run the GC
 * from wherever it stopped the process, to ask for and then let the process
 * run. Asked from a thread of the VM's, with the process stopped (the next
 * allocation recorded asks again). The file is whole (renamed into place)
 * but not synced: the debugger reads it back at once. MEMPROF_BUSY while one
 * is pending. */
int memprof_report_soon(int kind, int flags, const char *path);
enum memprof_soon_state {
    MEMPROF_SOON_NONE = 0,      /* none asked for, or taken back */
    MEMPROF_SOON_QUEUED = 1,    /* asked for, the job not run yet */
    MEMPROF_SOON_WRITING = 2,   /* the job is running */
    MEMPROF_SOON_WRITTEN = 3,   /* the file is there */
    MEMPROF_SOON_FAILED = 4,    /* the job ran, the file could not be written */
};
/* The state of that report; `take_back` nonzero: a queued one is taken back
 * (its job then writes nothing) and MEMPROF_SOON_QUEUED returned. */
int memprof_report_soon_state(int take_back);

/* --- threads (memprof_start(MEMPROF_THREADS); doc/manual.md "Threads") -----
 * A record per thread, in the process, for debuggers to read. */
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
 * memprof-thread-events does), the event is in %rdi on x86-64. */
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

/* --- the tables, for a reader that cannot run code (a core file) ----------
 * memprof_tables, exported, says where the tracers' tables are and
 * how they are laid out; doc/tables.md describes them. A reader checks the
 * magic, the version and every size before it reads, and refuses a layout
 * it does not know with a reason. */
#define MEMPROF_TABLES_MAGIC "memprof-tables\0"
#define MEMPROF_TABLES_VERSION 10
struct memprof_tables {
    char magic[16];               /* MEMPROF_TABLES_MAGIC */
    uint32_t version;             /* MEMPROF_TABLES_VERSION */
    uint32_t size;                /* sizeof (struct memprof_tables) */
    uint64_t heap_running;        /* address of a bool: the tracer records */
    uint64_t heap_threads;        /* address of the newest thread's pointer */
    /* struct heap_thread (one per thread that allocated, newest first) */
    uint32_t thread_size, thread_next, thread_serial, thread_tid;
    uint32_t thread_young, young_slots;           /* [young_slots] block slots */
    uint32_t thread_blocks, thread_freed;         /* block tables */
    uint32_t thread_origins, thread_origin_count; /* origin array pointer, count */
    /* a block table's array: a u64 capacity, then slots (until version 5,
     * table_array was where a table pointed to its one array; 0 since) */
    uint32_t table_array, array_capacity, array_slots;
    /* a block slot: address (0 empty, odd a tombstone), number, word */
    uint32_t slot_size, slot_addr, slot_number, slot_word;
    uint32_t word_size_bits;      /* word: size in the low bits, origin above */
    /* an origin: key (site, thread << thread_shift), link, counters */
    uint32_t origin_array_records, origin_size, origin_key, origin_link;
    uint32_t origin_total_count, origin_total_bytes, origin_peak_bytes;
    uint32_t thread_shift;

    /* The Ruby tracer (version 2): its state, and offsets in it */
    uint64_t ruby_tracer;
    uint32_t ruby_tracer_size;
    uint32_t ruby_objects, ruby_origins, ruby_sites;  /* slot map, intern table, site table */
    uint32_t ruby_origin_names, ruby_origin_names_bytes, ruby_class_names; /* u32 array: pointer, u64 size; string pool */
    uint32_t ruby_sample, ruby_dropped;                /* u32 (1 in N), u64 */
    uint32_t ruby_hidden_files, ruby_hidden_len;       /* char array, u64 */
    uint32_t ruby_epoch_gc, ruby_epoch_gc_bytes;       /* u64 array: pointer, u64 size */
    /* a slot map: page geometry (u64 each), its open-addressed pages, the mask */
    uint32_t map_page_size, map_slot_size, map_slots_per_page, map_pages, map_page_mask, map_count;
    uint32_t page_size, page_base, page_records;       /* a page: base (0 empty), records */
    uint32_t record_size, record_origin, record_aux;   /* origin + 1 (0 none), aux */
    uint32_t aux_type_mask, aux_epoch_shift;
    /* an intern table: its tuples (a, b: u64 each) and their count (u64) */
    uint32_t intern_tuples, intern_count, tuple_size, tuple_a, tuple_b;
    /* a site table: its file names (a string pool) and frames (intern table:
     * a = file offset << 32 | line, b = the caller's site, or all ones) */
    uint32_t sites_files, sites_frames;
    uint32_t pool_chars, pool_len;                     /* pointer, u64 */

    /* The C heap's frames (version 2): an origin's link is its caller's
     * index + 1 in the same thread (0: none) in the low 32 bits, and its Ruby
     * line's site + 1 in heap_ruby_lines (0: none) in the high 32 bits */
    uint64_t heap_frames;         /* address of an int: frames per site asked for */
    uint64_t heap_ruby_lines;     /* address of a site table */
    uint32_t sites_size;          /* sizeof a site table */
    /* the allocation wrappers' code: address of a pointer to a table of
     * sorted ranges [start, end) (u64 each) and their count (u64) */
    uint64_t heap_wrappers;
    uint32_t wrappers_count, wrappers_ranges, range_size, range_start, range_end, wrappers_max;
    /* a heap thread's name (char[thread_name_size]) as of its first
     * allocation, or its exit */
    uint32_t thread_name, thread_name_size;
    uint32_t thread_exited;       /* a heap thread's bool: it exited */
    /* whether each tracer records: addresses of bools */
    uint64_t ruby_running, threads_running;
    /* the thread registry (struct memprof_thread_registry, above) */
    uint64_t thread_registry;
    /* address of a u64: mean bytes between sampled blocks, 0: every block */
    uint64_t heap_sample_bytes;

    /* Version 3 to 5: the array a block table grew from (0 since version 6) */
    uint32_t table_draining;

    /* Version 4: the address of a u64 that changes whenever the tables'
     * memory is unmapped or moved: a reader of a running process reads it
     * before and after, and reads again when it changed */
    uint64_t tables_generation;
    /* and the Ruby objects made at each origin: in the tracer, a u64 array
     * (pointer, u64 size in bytes), and its pc cache, inline, whose entries
     * hold counts not added there yet (an origin u32 and a count u32) */
    uint32_t ruby_origin_allocs, ruby_origin_allocs_bytes;
    uint32_t ruby_pc_cache, pc_cache_entries, pc_entry_size, pc_entry_origin, pc_entry_allocs;

    /* Version 5: the older blocks' table (thread_blocks) is packed: slots of
     * packed_slot_size bytes, a u64 key (the address in its low
     * packed_addr_bits, odd a tombstone; the origin's low bits above) then a
     * u64 value (the origin's high packed_origin_high_bits, the size in
     * packed_size_bits, the number's distance from its array's base in
     * packed_number_bits above); an array's base is a u64 at
     * array_number_base. Blocks that do not pack are in a wide table (the
     * slots above) at thread_spill. */
    uint32_t thread_spill, array_number_base;
    uint32_t packed_slot_size, packed_addr_bits, packed_origin_high_bits, packed_size_bits, packed_number_bits;

    /* Version 6: a block table is a directory of regions (the keys equal
     * above their low region_shift bits), each with an array of its own: a
     * pointer at table_directory (NULL: empty) to a u64 capacity at
     * directory_capacity and then, at directory_regions, that many entries
     * of region_size bytes: a u64 key (0: unused) at region_key and a
     * pointer at region_array to the region's array. */
    uint32_t table_directory, directory_capacity, directory_regions, region_size, region_key, region_array;
    uint32_t region_shift;

    /* Version 7: the first young_direct of a thread's young slots are
     * direct-mapped, the rest a ring of blocks leaving for the older table;
     * the unsigned at thread_leaving_next is the ring's slot filled next
     * (the oldest; the newest is the one before it). Of a thread's events
     * at one address with one number (the older block freed unseen), a
     * direct young slot's is the newest, then the ring's, newest first,
     * then the tables'. */
    uint32_t young_direct, thread_leaving_next;

    /* Version 8: a thread's record outlives the thread and is taken, with
     * the blocks it holds, by a thread started later, which has a serial of
     * its own: a record's origins may have any serial, and thread_serial,
     * thread_tid and thread_name are its thread's now. Who held each serial
     * is at heap_identities, the address of a pointer (NULL: none yet) to
     * identity_max + 1 entries of identity_size bytes, by serial: an i32
     * tid at identity_tid, a bool at identity_exited and a name
     * (char[thread_name_size]) at identity_name. */
    uint64_t heap_identities;
    uint32_t identity_max, identity_size, identity_tid, identity_exited, identity_name;

    /* Version 9: an array of the older blocks' table whose bool at
     * array_logged is set is a log: its room for capacity packed slots
     * holds u64 entries, read in order up to the first 0. An entry with bit
     * 0 set is a block: its address less the u64 at array_region_base,
     * divided by 8, in the log_place_bits above bit 0, then its origin's
     * index in log_origin_bits, then its size in log_size_bits. Its number
     * is the array's base (array_number_base) before any number entry, and
     * after one (bit 0 clear) the base + (entry >> 1) - 1. */
    uint32_t array_logged, array_region_base;
    uint32_t log_place_bits, log_origin_bits, log_size_bits;

    /* Version 10: an array's u64 at array_stamp is odd while the array is
     * a region's, and never the same twice: a reader of a running process
     * reads it, then the region's pointer, then the array, then the stamp
     * again, and takes the array only if the pointer was the array and
     * the stamp did not change. An array replaced no longer changes
     * tables_generation. */
    uint32_t array_stamp;
};
extern const struct memprof_tables memprof_tables;

#ifdef __cplusplus
}
#endif
#endif
