/* The runtime's raw C heap report (MEMPROF_HEAP_OUTPUT, memprof-info heap,
 * memprof core), read into rows: what the named report (heap_symbolize.c) and
 * the pprof profile (heap_proto.c) are made from. Format: doc/formats.md. */
#ifndef MEMPROF_TOOLS_HEAP_RAW_H
#define MEMPROF_TOOLS_HEAP_RAW_H
#include <stdint.h>
#include <stdio.h>

/* A return address as the runtime wrote it: absolute, and "object+0xOFFSET". */
struct raw_frame {
    uint64_t site;
    char *object;
};

struct raw_row {
    struct raw_frame *raw;   /* the site, then each caller */
    size_t raw_count, raw_cap;
    unsigned wrapped;        /* how many raw frames the runtime found in wrappers */
    char *ruby;              /* "file:line" or NULL */
    unsigned thread;         /* the allocating thread (--by-thread), or 0 */
    uint64_t count, bytes, peak, allocs, total_bytes;
};

/* A "# thread N tid count bytes allocs name" line. */
struct raw_thread {
    unsigned serial;
    long tid;
    uint64_t count, bytes, allocs;
    char name[32];
};
#define MAX_RAW_THREADS 65536   /* the runtime's serials stop at 65535: its lines all fit */

struct raw_report {
    struct raw_row *rows;
    size_t count, cap;
    struct raw_thread *threads;          /* by serial, as the runtime writes them */
    size_t thread_count, thread_cap;
    unsigned long blocks, table_bytes;   /* "# tables" */
    uint64_t sample;                     /* mean bytes between samples; 0: exact */
    uint64_t stacks_walked, stacks_remembered;   /* "# stacks" */
    long pid;                            /* 0 when not given */
    unsigned frames;                     /* the frames the run asked for */
    char wrappers[1024];                 /* the run's --wrapper patterns */
    char when[96];                       /* "at its peak (...) of", "at SIGNAL (...) of", or "" */
    char *warnings;                      /* "# warning: " lines' text, each ending "\n", or NULL */
};

/* 0, or -1 when memory ran out (the report is then freed). */
int heap_raw_read(FILE *in, struct raw_report *r);
void heap_raw_free_row(struct raw_row *row);
void heap_raw_free(struct raw_report *r);
#endif
