/* The runtime's one lock around its tables. A spinning try-lock rather than a
 * mutex: a report called from GDB must be able to see that the lock is held and
 * give up instead of blocking the stopped process forever. */
#ifndef MEMPROF_UTIL_SPINLOCK_H
#define MEMPROF_UTIL_SPINLOCK_H
#include "../arch/cpu.h"
#include <stdbool.h>
#include <sys/syscall.h>
#include <unistd.h>

/* held: 0 free, 1 taken by a hook, -tid taken by a report on thread tid.
 * Reports never nest on one thread, so a report (or a hook) that finds the
 * lock taken by a report of its own thread knows that report never returned:
 * GDB unwound the call after a fault. It takes the lock over rather than
 * answering "busy" forever (or spinning forever, with Ractors). */
typedef struct { int held; } spinlock_t;

static inline int spin_thread_id(void)
{
    return (int)syscall(SYS_gettid);
}

/* Take the lock as `as` (1, or -tid); `self` is -tid of the calling thread,
 * or 0 when not yet known. */
static inline bool spin_take(spinlock_t *l, int as, int self)
{
    int expected = 0;
    if (__atomic_compare_exchange_n(&l->held, &expected, as, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return true;
    if (expected >= 0)
        return false;
    /* Only the thread itself can find its own abandoned report's mark. */
    if (!self)
        self = -spin_thread_id();
    return expected == self &&
           __atomic_compare_exchange_n(&l->held, &expected, as, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static inline bool spin_trylock(spinlock_t *l)
{
    return spin_take(l, 1, 0);
}

/* For a report: the lock is marked with the reporting thread. */
static inline bool spin_trylock_report(spinlock_t *l)
{
    int self = -spin_thread_id();
    return spin_take(l, self, self);
}

static inline void spin_lock(spinlock_t *l)
{
    if (spin_take(l, 1, 0))
        return;
    int self = -spin_thread_id();
    while (!spin_take(l, 1, self))
        for (int h; (h = __atomic_load_n(&l->held, __ATOMIC_RELAXED)) != 0 && h != self;)
            cpu_relax();
}

/* Take the lock when the caller knows no other thread can be taking it now
 * (the Ruby VM's GVL serializes every allocation): a plain store instead of
 * an atomic exchange, whose full barrier was half of a hook's cost. The lock
 * is still seen held by a report made with the process stopped. */
static inline void spin_lock_serialized(spinlock_t *l)
{
    __atomic_store_n(&l->held, 1, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static inline void spin_unlock(spinlock_t *l)
{
    __atomic_store_n(&l->held, 0, __ATOMIC_RELEASE);
}

static inline bool spin_is_held(spinlock_t *l)
{
    return __atomic_load_n(&l->held, __ATOMIC_RELAXED) != 0;
}

/* After fork only the calling thread exists: a lock held by another thread at
 * the moment of fork would stay held forever in the child. */
static inline void spin_reset(spinlock_t *l)
{
    __atomic_store_n(&l->held, 0, __ATOMIC_RELEASE);
}
#endif
