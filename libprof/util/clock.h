/* The monotonic clock in nanoseconds: the vDSO's, no system call, no lock,
 * safe in a hook or a signal handler. */
#ifndef MEMPROF_UTIL_CLOCK_H
#define MEMPROF_UTIL_CLOCK_H
#include <stdint.h>
#include <time.h>

static inline uint64_t clock_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
#endif
