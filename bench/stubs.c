/* Per-call cost of memprof's interceptor stubs against a direct call, in
 * cycles: rdtsc fenced with lfence around batches of calls, as the seeds
 * measured. The handlers are empty, so this is the stubs' own cost. */
#include "hook/intercept.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <x86intrin.h>

#define BATCH 1000
#define SAMPLES 2000

__attribute__((noinline)) long target(long a, long b)
{
    __asm__ volatile("");
    return a + b;
}

static void pre(uint32_t id, struct intercept_regs *regs) { (void)id, (void)regs; }
static void post(uint32_t id, const struct intercept_return *ret, const uint64_t data[2]) { (void)id, (void)ret, (void)data; }

static uint64_t fenced_rdtsc(void)
{
    _mm_lfence();
    uint64_t t = __rdtsc();
    _mm_lfence();
    return t;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void measure(const char *name, long (*volatile fn)(long, long))
{
    static double per_call[SAMPLES];
    long sink = 0;
    for (int s = 0; s < SAMPLES; s++) {
        uint64_t t0 = fenced_rdtsc();
        for (int i = 0; i < BATCH; i++)
            sink += fn(i, 1);
        per_call[s] = (double)(fenced_rdtsc() - t0) / BATCH;
    }
    if (sink == 42)
        puts("");
    qsort(per_call, SAMPLES, sizeof *per_call, by_value);
    double mean = 0, var = 0;
    for (int s = 0; s < SAMPLES; s++)
        mean += per_call[s] / SAMPLES;
    for (int s = 0; s < SAMPLES; s++)
        var += (per_call[s] - mean) * (per_call[s] - mean) / SAMPLES;
    printf("%-24s %8.1f %8.1f %8.1f %8.1f\n", name, per_call[0], per_call[SAMPLES / 2], per_call[SAMPLES - 1],
           sqrt(var));
}

int main(void)
{
    struct intercept_stub entry, full, keeping;
    if (intercept_entry_stub(1, "target", pre, (uintptr_t)&target, &entry) != 0 ||
        intercept_full_stub(2, "target", pre, post, (uintptr_t)&target, &full) != 0 ||
        intercept_keeping_stub(3, "target", pre, post, (uintptr_t)target, (uintptr_t)&target, &keeping) != 0) {
        fputs("stubs: cannot make the stubs\n", stderr);
        return 1;
    }
    *entry.original = (void *)target;
    *full.original = (void *)target;
    printf("cycles per call (%d samples of %d calls)\n", SAMPLES, BATCH);
    printf("%-24s %8s %8s %8s %8s\n", "", "min", "median", "max", "stddev");
    measure("direct call", target);
    measure("entry stub", (long (*)(long, long))entry.entry);
    measure("entry + return stubs", (long (*)(long, long))full.entry);
    measure("keeping every register", (long (*)(long, long))keeping.entry);
    return 0;
}
