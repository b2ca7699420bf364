/* A per-thread "inside memprof" flag. A hook that finds it set returns without
 * recording: memprof's own work (or a signal handler interrupting a hook) must
 * never re-enter a hook and wait on a lock this thread already holds.
 * initial-exec TLS: no allocation on first use, also when injected by dlopen. */
#ifndef MEMPROF_UTIL_REENTRY_H
#define MEMPROF_UTIL_REENTRY_H
#include <stdbool.h>

extern __thread int memprof_in_runtime __attribute__((tls_model("initial-exec")));

static inline bool reentry_enter(void)
{
    if (memprof_in_runtime)
        return false;
    memprof_in_runtime = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    return true;
}

static inline void reentry_leave(void)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    memprof_in_runtime = 0;
}
#endif
