/* The thread registry: every thread's number, tid, creation site, stack and
 * allocation counts, kept inside the process (memprof.h has the record's
 * layout: debuggers and `memprof threads -p` read it from outside).
 *
 * Threads are followed through an interposed pthread_create (a GOT hook):
 * each new thread starts in memprof's own start routine, which fills its
 * record and announces it through memprof_thread_event, the function a
 * debugger breaks on, as nptl's __nptl_create_event; a thread-specific
 * key's destructor announces its exit, whichever way it leaves. */
#ifndef MEMPROF_TRACE_THREADS_H
#define MEMPROF_TRACE_THREADS_H
#include "../util/out.h"
#include <stdbool.h>
#include <stddef.h>

/* Start following threads: the pthread_create hook, and a record for each
 * thread already running (its creation site unknown). Idempotent. Calls
 * malloc (dl_iterate_phdr, the first key): not from a hook. */
bool threads_start(void);
/* Stop following new threads (the hook removed); the registry stays. */
void threads_stop(void);
bool threads_running(void);
/* The flag threads_running reads, for a reader of a core (memprof_tables). */
extern bool threads_following;
/* "  Num   Tid  State    Stack  Allocs  Bytes  Created at  Name" lines. */
void threads_report(struct out *o);
/* Records, and bytes the registry takes. */
void threads_usage(unsigned long *records, unsigned long *bytes);
/* Live thread stacks known: how many, and their bytes. */
void threads_stacks(unsigned long *count, unsigned long *bytes);
#endif
