/* Threads of memprof's own (the peak report's writer, the timeline's
 * sampler, the profile server): started one way, so that none of them
 * uses the program's descriptor numbers or takes the program's signals. */
#ifndef MEMPROF_RUNTIME_OWN_THREAD_H
#define MEMPROF_RUNTIME_OWN_THREAD_H
#include <stddef.h>

/* One thread's start, kept where the thread can still reach it after its
 * starter stopped waiting: static storage of the caller's, not to be
 * read. */
struct own_thread {
    void (*body)(void *arg);
    void *arg;
    const char *what;
    int give[2];
    size_t given;
    int state;   /* 0: not yet; 1: its own table; -errno: it has none */
};

/* Starts `body(arg)` on a detached thread named `name`, with a small
 * stack, the program's asynchronous signals blocked, every allocation it
 * makes ignored (reentry.h), and a descriptor table of its own holding
 * only `give` (count at most 2) and /dev/null at 0-2 (own_files.h).
 * 0 once the thread has its table: the program's copies of `give` are
 * then closed (with none given, 0 at once: the thread says if it fails). An errno when it has none: the body does not run, a line
 * said "memprof: WHAT: ..." and the copies are the caller's to close.
 * ETIMEDOUT when the thread did not run within 2 s: the copies are left
 * in both tables (the thread still says if it cannot have its own). */
int own_thread_start(struct own_thread *t, const char *name, const char *what, void (*body)(void *arg),
                     void *arg, const int *give, size_t count);
#endif
