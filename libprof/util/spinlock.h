/* The runtime's one lock around its tables. A spinning try-lock rather than a
 * mutex: a report called from GDB must be able to see that the lock is held and
 * give up instead of blocking the stopped process forever. */
#ifndef MEMPROF_UTIL_SPINLOCK_H
#define MEMPROF_UTIL_SPINLOCK_H
#include <stdbool.h>

typedef struct { int held; } spinlock_t;

static inline bool spin_trylock(spinlock_t *l)
{
    return !__atomic_exchange_n(&l->held, 1, __ATOMIC_ACQUIRE);
}

static inline void spin_lock(spinlock_t *l)
{
    while (!spin_trylock(l))
        while (__atomic_load_n(&l->held, __ATOMIC_RELAXED))
            __builtin_ia32_pause();
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
