/* The sampling arithmetic of heap_sample.h (its own ln and expm1, so that
 * the runtime needs no libm) against libm's, which this program links: the
 * functions to within a few units in the last place, and the weights and
 * scaled bytes the hooks and the reports use to the same integers. */
#include "../../libprof/trace/heap/heap_sample.h"
#include "../tap.h"
#include <math.h>
#include <stdbool.h>

/* |got - want| in units of want's last place (0 when equal). */
static double ulps(double got, double want)
{
    if (got == want)
        return 0;
    return fabs(got - want) / fabs(nextafter(want, INFINITY) - want);
}

/* The largest error seen, and where. */
struct worst {
    double ulps, at;
};

static void note_error(struct worst *w, double got, double want, double at)
{
    double e = ulps(got, want);
    if (e > w->ulps)
        *w = (struct worst){ e, at };
}

int main(void)
{
    uint64_t state = 0x9E3779B97F4A7C15ull;
    struct worst ln = { 0, 0 }, em1 = { 0, 0 };
    /* Every value sample_interval draws is (k+1)·2^-53: the ends, the
     * points around √½ and 1 where the reduction changes, and random ones. */
    double edges[] = { 0x1p-53, 0x1p-52, 0x1.6a09e667f3bccp-1, 0x1.6a09e667f3bcdp-1, 0x1.6a09e667f3bcep-1,
                       0.5, 0.75, 1 - 0x1p-53, 1 - 0x1p-20, 1 };
    for (size_t i = 0; i < sizeof edges / sizeof *edges + 2000000; i++) {
        double u = i < sizeof edges / sizeof *edges ? edges[i]
                                                     : (double)((sample_random(&state) >> 11) + 1) * 0x1p-53;
        note_error(&ln, sample_ln(u), log(u), u);
    }
    /* Below √½ the reduction's e·ln 2 and ln m cancel partly: a bit lost. */
    ok(ln.ulps <= 4, "ln of 2M draws of (0, 1] within 4 ulps of libm's log (worst %.2f at %a)", ln.ulps, ln.at);
    ok(sample_ln(1) == 0, "ln 1 is 0 exactly (a draw of 1 samples the next byte)");

    /* -size/mean: from one byte in 2^40 to blocks far larger than the mean. */
    for (int i = 0; i < 2000000; i++) {
        double x = -ldexp((double)((sample_random(&state) >> 11) + 1) * 0x1p-53, (int)(sample_random(&state) % 52) - 41);
        note_error(&em1, sample_expm1(x), expm1(x), x);
    }
    double steps[] = { -0x1p-60, -0x1.0000000000001p-9, -0x1p-9, -0x1.0000000000001p-4, -0x1p-4, -0.4999999, -0.5, -0.5000001, -1, -20, -707.9, -708, -708.1, -1000, -0x1p40 };
    for (size_t i = 0; i < sizeof steps / sizeof *steps; i++)
        note_error(&em1, sample_expm1(steps[i]), expm1(steps[i]), steps[i]);
    ok(em1.ulps <= 2, "expm1 of 2M values in [-2^11, -2^-41] and the branches' edges within 2 ulps of libm's (worst %.2f at %a)",
       em1.ulps, em1.at);

    /* The integers themselves, as libm and llround gave them before. */
    uint64_t means[] = { 1, 4096, 524288, 1 << 20, UINT64_C(1) << 30, HEAP_SAMPLE_MAX };
    size_t by_one = 0, by_more = 0, compared = 0;
    for (size_t m = 0; m < sizeof means / sizeof *means; m++)
        for (int i = 0; i < 200000; i++) {
            uint64_t size = (sample_random(&state) >> (sample_random(&state) % 64)) % (UINT64_C(1) << 40) + 1;
            double p = -expm1(-(double)size / (double)means[m]);
            uint64_t weight = (uint64_t)llround((double)SAMPLE_WEIGHT_ONE / p);
            uint64_t scaled = (uint64_t)llround((double)size / p);
            uint64_t mine[2] = { sample_weight(size, means[m]), sample_scaled_bytes(size, means[m]) };
            uint64_t theirs[2] = { weight, scaled };
            for (int k = 0; k < 2; k++, compared++)
                if (mine[k] != theirs[k])
                    *(mine[k] + 1 == theirs[k] || mine[k] == theirs[k] + 1 ? &by_one : &by_more) += 1;
        }
    /* A figure within a few ulps of libm's rounds the other way only when it
     * lies that close to .5: by one, and mostly near 2^40, where an ulp is a
     * 4096th. */
    ok(by_more == 0 && by_one * 1000 <= compared,
       "weights and scaled bytes are libm's and llround's (%zu of %zu differ by one, none by more)", by_one, compared);
    ok(sample_weight(0, 524288) == SAMPLE_WEIGHT_ONE && sample_scaled_bytes(100, 0) == 100,
       "no sampling: each block counts once, at its size");

    /* The intervals: exponential with the mean asked for. */
    double sum = 0;
    int n = 1000000;
    for (int i = 0; i < n; i++)
        sum += (double)sample_interval(&state, 524288);
    ok(fabs(sum / n / 524288 - 1) < 0.005, "the mean interval is the mean asked for (%.4f of it)", sum / n / 524288);
    return tap_done();
}
