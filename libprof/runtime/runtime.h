/* The runtime's glue between the tracers and the outside: the exported API
 * (api.c), what GDB alone uses (debugger.c), reports of each kind
 * (reports.c), the reports made at exit (exit.c) and start-up from the
 * environment (startup.c). One status type (enum memprof_status) and one
 * channel for text (text.c) serve them all. */
#ifndef MEMPROF_RUNTIME_H
#define MEMPROF_RUNTIME_H
#include "../memprof.h"
#include "../util/environment.h"
#include "../util/out.h"
#include <stdbool.h>
#include <stddef.h>

#define EXPORT __attribute__((visibility("default")))

/* --- text.c: the one channel ----------------------------------------------
 * Each exported call ends with call_done: its status, and the text
 * memprof_text() gives: `text` (a report, an allocation), else the message
 * the call wrote (message_begin), else the status's own line. */
int call_done(int status, const char *text);
/* The call's one-line message, written through `o` (replaces the last one). */
void message_begin(struct out *o);
/* The same for a writer that takes a buffer and its size. */
char *message_buffer(size_t *size);
/* The line memprof_text() gives for `status` when the call said nothing. */
const char *status_line(int status);
/* One line on stderr, from the strings given up to a NULL. */
__attribute__((sentinel)) void say(const char *part, ...);

/* --- reports.c -------------------------------------------------------------- */
struct report_request {
    enum memprof_report_kind kind;
    int flags;                   /* enum memprof_report_flag */
    unsigned long top;
    unsigned since;
    const char *filter;
    const char *preface;         /* lines written before the report, or NULL */
    const char *trailer;         /* lines written after it, once it is whole, or NULL */
    int gc;                      /* enum ruby_gc_state: a GC run for it already */
    const char *when;            /* a table's header: "at exit of" (NULL: "in") */
    bool scratch;                /* a file its reader takes back at once: not synced */
};
/* The report into `fd`, into the file `path` (atomically), or as text owned
 * by reports.c; each sets the call's status and text (call_done). */
int report_to_fd(int fd, const struct report_request *r);
int report_to_file(const char *path, const struct report_request *r);
/* Whether `path` is one of `memprof run`'s scratch files (MEMPROF_SCRATCH: a
 * prefix), which it reads back as soon as the process ends: not synced. */
bool report_path_is_scratch(const char *path);
int report_to_text(const struct report_request *r);
/* The report into `fd`, the status only (no message, no call_done): for
 * serve.c's thread, which is no API call. */
int report_write_quietly(int fd, const struct report_request *r);
/* memprof_report_soon and memprof_report_soon_state (memprof_debugger.h). */
int report_soon(int kind, int flags, const char *path);
int report_soon_state(bool take_back);
/* The same asked for by a thread that is not the VM's (serve.c's): the
 * status only; ask again while it waits (ruby_tracer_postpone_from_outside). */
int report_soon_from_outside(int kind, int flags, const char *path);
void report_soon_ask_again(void);

/* --- api.c: the tracers started and stopped as the API does ---------------- */
int tracers_start(int tracers);

/* --- exit.c ------------------------------------------------------------------ */
/* `owner`: the process owning the report paths (MEMPROF_OWNER_PID), 0 if
 * none yet: this one, and its children are told; but when `owner_parent`
 * (MEMPROF_OWNER_PARENT) is not 0, only a child of that process. */
void exit_reports_init(unsigned long owner, unsigned long owner_parent);
/* The Ruby tracer's end-of-program report (MEMPROF_OUTPUT, MEMPROF_DUMP). */
void ruby_report_at_exit(void);
/* Whether a Ruby process reports at exit, and how: MEMPROF_SORT, MEMPROF_TOP,
 * MEMPROF_BYTES (startup.c reads them). */
void exit_reports_want_ruby(bool wanted, int flags, unsigned long top);
/* MEMPROF_HEAP_OUTPUT, MEMPROF_HEAP_PPROF: at the program's end and at exit;
 * `at_peak`: the first as it was at the peak (MEMPROF_HEAP_AT_PEAK). */
void exit_reports_want_heap(bool at_peak);
/* The heap reports' flags the environment asks for (MEMPROF_HEAP_BY_THREAD,
 * MEMPROF_HEAP_FREED_SITES). */
int heap_flags(void);
/* The same reports now, from a handler of signal `number` (signals.c). */
void exit_reports_at_signal(int number);
/* Where this process writes what `spec` names: %p is the pid; a process
 * other than the owner writes SPEC.PID.NAME. False if it does not fit. */
bool expand_output_path(const char *spec, char *path, size_t size);
/* Whether this process owns the report paths (the first of its tree). */
bool exit_reports_owner(void);
/* The heap's peak snapshot, now, where `spec` says (peak.c): MEMPROF_BUSY,
 * unsaid, while a hook takes a snapshot. */
int exit_reports_heap_peak_to(const char *spec);

/* --- peak.c: the C heap's peak followed (MEMPROF_PEAK, MEMPROF_HEAP_AT_PEAK,
 * MEMPROF_PEAK_REPORT), snapshots when live bytes grow by `step` %; the
 * last one kept in MEMPROF_PEAK_REPORT's file. */
void peak_reports_init(unsigned long step);

/* --- timeline.c: MEMPROF_TIMELINE, sampled every `interval_ms` (doubling
 * every 1000 samples) by a thread of memprof's own ----------------------- */
void timeline_init(unsigned long interval_ms);

/* --- serve.c: MEMPROF_SERVE=ADDR:PORT, profiles over HTTP from a thread of
 * memprof's own (the process that owns the reports; with
 * MEMPROF_SERVE_FORKS=1 each forked child too, on a port of its own). */
void serve_init(void);

/* --- signals.c: MEMPROF_ON_SIGNAL ------------------------------------------- */
void signal_reports_init(void);
const char *signal_name(int number);   /* "SIGSEGV", or "a signal" */

#endif
