/* memprof's runtime: the C API of libmemprof.so.
 *
 * Every function is safe to call from GDB with the process stopped anywhere:
 * none calls malloc, and none waits on a lock (a held lock is reported as
 * MEMPROF_BUSY). Statuses are stable numbers; doc/manual.md lists them. */
#ifndef MEMPROF_H
#define MEMPROF_H

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
};

int memprof_start(void);   /* hook the allocators and record */
int memprof_stop(void);    /* stop recording, restore every patched slot */
int memprof_reset(void);   /* forget what was recorded */
int memprof_running(void); /* 1 while recording */

/* Write the live-object table to `fd`. */
int memprof_report(int fd);
/* The table (or, on failure, a one-line message) as text owned by the
 * runtime, valid until the next call; memprof_last_status() tells which. */
const char *memprof_report_text(void);
int memprof_last_status(void);

/* A one-line message for a status (for MEMPROF_OK: the current state). */
const char *memprof_strerror(int status);
const char *memprof_version(void);

#ifdef __cplusplus
}
#endif
#endif
