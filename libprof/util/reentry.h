/* A per-thread "inside memprof" flag. A hook that finds it set returns without
 * recording: memprof's own work (or a signal handler interrupting a hook) must
 * never re-enter a hook and wait on a lock this thread already holds.
 * initial-exec TLS: no allocation on first use, also when injected by dlopen. */
#ifndef MEMPROF_UTIL_REENTRY_H
#define MEMPROF_UTIL_REENTRY_H
#include <stdbool.h>

struct heap_thread;

/* The words a hook reads first, in one TLS block: one load of its offset
 * reaches the flag and the heap hooks' record of the thread (heap_hooks.c;
 * never NULL, an empty record until the thread has its own). Apart, each
 * took a load of its own on every malloc and free. */
struct thread_words {
    int in_runtime;
    struct heap_thread *heap_short_path;
};
extern __thread struct thread_words memprof_thread_words __attribute__((tls_model("initial-exec")));

/* On x86 one compare with the flag in memory, where GCC loads it into a
 * register first: one instruction more in every hook. */
static inline bool reentry_inside(void)
{
#if defined(__x86_64__)
    bool inside;
    __asm__("cmpl $0, %1" : "=@ccne"(inside) : "m"(memprof_thread_words.in_runtime));
    return inside;
#else
    return memprof_thread_words.in_runtime != 0;
#endif
}

static inline bool reentry_enter(void)
{
    if (reentry_inside())
        return false;
    memprof_thread_words.in_runtime = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    return true;
}

/* The flag set by a path that found it clear already. */
static inline void reentry_mark(void)
{
    memprof_thread_words.in_runtime = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static inline void reentry_leave(void)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    memprof_thread_words.in_runtime = 0;
}
#endif
