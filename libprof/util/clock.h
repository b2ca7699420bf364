/* Clocks in nanoseconds, safe in a hook: no lock, no allocation. */
#ifndef MEMPROF_UTIL_CLOCK_H
#define MEMPROF_UTIL_CLOCK_H
#include <stdint.h>
#include <time.h>

/* The monotonic clock: the vDSO's, no system call (safe in a signal
 * handler too). */
static inline uint64_t clock_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The calling thread's CPU time in nanoseconds: a system call (no vDSO
 * for it), no lock, no allocation. Time the thread was preempted is not
 * in it. */
static inline uint64_t clock_thread_cpu_ns(void)
{
    struct timespec t;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0)
        return 0;
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
#endif
