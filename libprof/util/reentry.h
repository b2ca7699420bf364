/* A per-thread "inside memprof" flag. A hook that finds it set returns without
 * recording: memprof's own work (or a signal handler interrupting a hook) must
 * never re-enter a hook and wait on a lock this thread already holds.
 * initial-exec TLS: no allocation on first use, also when injected by dlopen. */
#ifndef MEMPROF_UTIL_REENTRY_H
#define MEMPROF_UTIL_REENTRY_H
#include <stdbool.h>

extern __thread int memprof_in_runtime __attribute__((tls_model("initial-exec")));

/* Test and set in one instruction, bts, where a load, a test and a store
 * took three: every hook runs it. Not locked: only this thread, and its
 * signal handlers between two of its instructions, touch the flag. The
 * "memory" clobber keeps the hook's work after it, as a signal fence. */
static inline bool reentry_enter(void)
{
    bool was_inside;
    __asm__ volatile("btsl $0, %0" : "+m"(memprof_in_runtime), "=@ccc"(was_inside) : : "memory");
    return !was_inside;
}

static inline void reentry_leave(void)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    memprof_in_runtime = 0;
}
#endif
