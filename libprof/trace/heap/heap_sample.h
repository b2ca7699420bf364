/* Sampling the C heap by bytes (MEMPROF_SAMPLE_BYTES=N), as tcmalloc and
 * jemalloc do: sample points fall on the bytes allocated at exponential
 * intervals of mean N, and an allocation holding one is recorded. A block
 * of s bytes is then recorded with probability p = 1 - exp(-s/N), whatever
 * came before it, and counts 1/p blocks and s/p bytes: an unbiased
 * estimate, whose standard deviation for a row of B bytes is at most
 * sqrt(B·N) (the variance of one block, s²(1-p)/p, is at most s·N).
 *
 * Used by the hooks (heap_hooks.c), the report (heap_report.c) and the core
 * reader (tools/core/core_heap.c): the scaling must be the same in all three. */
#ifndef MEMPROF_TRACE_HEAP_SAMPLE_H
#define MEMPROF_TRACE_HEAP_SAMPLE_H
#include <math.h>
#include <stdint.h>

/* The longest mean interval: a block's stored size has 40 bits. */
#define HEAP_SAMPLE_MAX (UINT64_C(1) << 40)

/* Weights are summed in this fixed point, rounded once per row. */
#define SAMPLE_WEIGHT_ONE (UINT64_C(1) << 16)

/* 1/p for a block of `size` bytes, in SAMPLE_WEIGHT_ONE units. */
static inline uint64_t sample_weight(uint64_t size, uint64_t mean)
{
    if (!size || !mean)
        return SAMPLE_WEIGHT_ONE;
    double p = -expm1(-(double)size / (double)mean);
    return (uint64_t)llround((double)SAMPLE_WEIGHT_ONE / p);
}

/* s/p: the bytes a recorded block of `size` stands for (exactly `size`
 * without sampling). The hooks add and take away this same figure. */
static inline uint64_t sample_scaled_bytes(uint64_t size, uint64_t mean)
{
    if (!size || !mean)
        return size;
    return (uint64_t)llround((double)size / -expm1(-(double)size / (double)mean));
}

/* xorshift64*: a thread's own generator (never 0). */
static inline uint64_t sample_random(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1Dull;
}

/* Bytes to the next sample point: exponential with mean `mean`, at least 1. */
static inline int64_t sample_interval(uint64_t *state, uint64_t mean)
{
    double u = (double)((sample_random(state) >> 11) + 1) * 0x1p-53;   /* (0, 1] */
    double bytes = -log(u) * (double)mean;
    return bytes < 1 ? 1 : bytes > 0x1p62 ? (int64_t)1 << 62 : (int64_t)bytes;
}
#endif
