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
#include <stdint.h>
#include <string.h>

/* The longest mean interval: a block's stored size has 40 bits. */
#define HEAP_SAMPLE_MAX (UINT64_C(1) << 40)

/* Weights are summed in this fixed point, rounded once per row. */
#define SAMPLE_WEIGHT_ONE (UINT64_C(1) << 16)

/* ln and expm1 without libm: loading libm costs every profiled process
 * 0.2 ms on a virtual machine (doc/benchmarks.md), inert ones too, for
 * three calls. Both are within a few units in the last place of libm's
 * (tests/sample-math-check), by series whose coefficients are constants:
 * multiplications only, none of a division's latency in the hooks. */
#define SAMPLE_LN2_HI 0x1.62e42feep-1   /* ln 2 in two parts: k·LN2_HI is exact */
#define SAMPLE_LN2_LO 0x1.a39ef35793c76p-33

/* 1/n!, n = 0 to 19. */
static const double sample_inverse_factorial[] = {
    1.0, 1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040, 1.0 / 40320, 1.0 / 362880,
    1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600, 1.0 / 6227020800.0, 1.0 / 87178291200.0,
    1.0 / 1307674368000.0, 1.0 / 20922789888000.0, 1.0 / 355687428096000.0, 1.0 / 6402373705728000.0,
    1.0 / 121645100408832000.0,
};
/* 1/(2j+1), j = 0 to 10. */
static const double sample_inverse_odd[] = {
    1.0, 1.0 / 3, 1.0 / 5, 1.0 / 7, 1.0 / 9, 1.0 / 11, 1.0 / 13, 1.0 / 15, 1.0 / 17, 1.0 / 19, 1.0 / 21,
};

/* 2^k, for k in a double's normal exponents (-1022 to 1023). */
static inline double sample_pow2(int k)
{
    uint64_t bits = (uint64_t)(k + 1023) << 52;
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* ln x for a normal x > 0: x = m·2^e with m in [√½, √2), and ln m =
 * 2·atanh(s), s = (m-1)/(m+1): |s| < 0.172, so the series to s^21 is exact
 * to a double's precision. */
static inline double sample_ln(double x)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    int e = (int)((bits >> 52) & 0x7ff) - 1023;
    bits = (bits & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1023) << 52);
    double m;
    memcpy(&m, &bits, sizeof m);   /* [1, 2) */
    if (m > 0x1.6a09e667f3bcdp+0) {   /* √2 */
        m /= 2;
        e++;
    }
    double s = (m - 1) / (m + 1), s2 = s * s, sum = sample_inverse_odd[10];
    for (int j = 9; j >= 0; j--)
        sum = sum * s2 + sample_inverse_odd[j];
    return (double)e * SAMPLE_LN2_HI + ((double)e * SAMPLE_LN2_LO + 2 * s * sum);
}

/* e^x - 1 for x <= 0: near 0 its Taylor series (no cancellation), as many
 * terms as |x| needs (a block far smaller than the mean: six); else e^x
 * from e^r·2^k, x = k·ln 2 + r, |r| <= ln 2 / 2. */
static inline double sample_expm1(double x)
{
    if (x > -0.5) {
        int n = x > -0x1p-9 ? 6 : x > -0x1p-4 ? 11 : 19;
        double t = sample_inverse_factorial[n];
        for (int k = n - 1; k >= 1; k--)
            t = t * x + sample_inverse_factorial[k];
        return x * t;
    }
    if (x < -708)
        return -1;   /* e^x is below 2^-1021: nothing beside 1 */
    int k = -(int)(-x / (SAMPLE_LN2_HI + SAMPLE_LN2_LO) + 0.5);
    double r = (x - k * SAMPLE_LN2_HI) - k * SAMPLE_LN2_LO, t = sample_inverse_factorial[14];
    for (int n = 13; n >= 0; n--)
        t = t * r + sample_inverse_factorial[n];
    return t * sample_pow2(k) - 1;
}

/* p = 1 - e^(-size/mean): the chance a block of `size` bytes is recorded
 * (both nonzero). */
static inline double sample_probability(uint64_t size, uint64_t mean)
{
    return -sample_expm1(-(double)size / (double)mean);
}

/* 1/p for a block of `size` bytes, in SAMPLE_WEIGHT_ONE units (rounded to
 * the nearest: the figure is positive). */
static inline uint64_t sample_weight(uint64_t size, uint64_t mean)
{
    if (!size || !mean)
        return SAMPLE_WEIGHT_ONE;
    return (uint64_t)((double)SAMPLE_WEIGHT_ONE / sample_probability(size, mean) + 0.5);
}

/* s/p: the bytes a recorded block of `size` stands for (exactly `size`
 * without sampling). The hooks add and take away this same figure. */
static inline uint64_t sample_scaled_bytes(uint64_t size, uint64_t mean)
{
    if (!size || !mean)
        return size;
    return (uint64_t)((double)size / sample_probability(size, mean) + 0.5);
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
    double bytes = -sample_ln(u) * (double)mean;
    return bytes < 1 ? 1 : bytes > 0x1p62 ? (int64_t)1 << 62 : (int64_t)bytes;
}
#endif
