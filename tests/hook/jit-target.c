/* The program jit-unwind.test debugs: a function hooked with an entry stub,
 * one with a full stub (entry and return), one with a keeping stub (every
 * register kept, the function reached through a slot), and a store to a
 * static variable sent through a store stub, called from main through a
 * chain of frames that keeps values in rbx, r12-r15 across the calls. The
 * stubs' addresses are in globals for the GDB script. Built -O0, -O2 and
 * -O2 -fomit-frame-pointer. */
#include "hook/intercept.h"
#include "hook/jit.h"
#include "hook/store_site.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uintptr_t entry_stub, entry_stub_end;        /* [start, end) of each stub */
uintptr_t full_stub, full_stub_end;
uintptr_t return_stub, return_stub_end;
uintptr_t keep_stub, keep_stub_end, keep_return_stub, keep_return_stub_end;
uintptr_t store_stub, store_resume;          /* the store stub, and where it goes back */
volatile long pre_calls, post_calls, worked, stored;

__attribute__((noinline)) void pre_handler(uint32_t id, struct intercept_regs *regs)
{
    pre_calls += id;
    regs->rsi += 1;   /* the hooked function sees b + 1 */
}

__attribute__((noinline)) void post_handler(uint32_t id, const struct intercept_return *ret, const uint64_t data[2])
{
    (void)data;
    post_calls += id + (long)ret->rax;
}

__attribute__((noinline)) long hooked_entry(long a, long b)
{
    worked += a;
    __asm__ volatile("" ::: "memory");
    return a * 10 + b;
}

__attribute__((noinline)) long hooked_full(long a, long b)
{
    worked += b;
    __asm__ volatile("" ::: "memory");
    return a * 100 + b;
}

__attribute__((noinline)) long hooked_keep(long a, long b)
{
    worked += a + b;
    __asm__ volatile("" ::: "memory");
    return a * 1000 + b;
}

/* A store the store stub replays; aligned so that its patch stays within a
 * cache line at every optimization level. */
static long last_value;
__attribute__((noinline, aligned(64))) void keep_last(long v)
{
    last_value = v;
}
enum { KEEP_LAST_BYTES = 32 };

__attribute__((noinline)) void store_handler(uint32_t id, uint64_t value)
{
    stored += (long)(id + value);
}

typedef long hooked_fn(long, long);
static hooked_fn *via_entry, *via_full, *via_keep;

/* Keeps live values in callee-saved registers across the hooked calls. */
__attribute__((noinline)) long caller(long n)
{
    long total = 0;
    for (long i = 0; i < n; i++) {
        long x = i * 3, y = i * 5, z = i * 7;
        total += via_entry(i, 1) + x;
        total += via_full(i, 2) + y + z;
        total += via_keep(i, 3) + x * y;
        keep_last(total + z);
    }
    return total;
}

int main(int argc, char **argv)
{
    struct intercept_stub e, f, k;
    struct store_patch stores;
    struct code_range keep_last_code = { (uintptr_t)keep_last, KEEP_LAST_BYTES };
    if (intercept_entry_stub(1, "hooked_entry", pre_handler, 0, &e) != 0 ||
        intercept_full_stub(2, "hooked_full", pre_handler, post_handler, 0, &f) != 0 ||
        intercept_keeping_stub(4, "hooked_keep", pre_handler, post_handler, (uintptr_t)hooked_keep, 0, &k) != 0 ||
        store_sites_find(&keep_last_code, 1, (uintptr_t)&last_value, &stores) != 0 || stores.count != 1 ||
        store_sites_apply(&stores, 5, "last_value", store_handler, 1) != 0) {
        fputs("jit-target: cannot make the stubs\n", stderr);
        return 1;
    }
    keep_stub = k.entry;
    keep_stub_end = k.entry + k.size;
    keep_return_stub = k.return_stub - 1;
    keep_return_stub_end = k.entry;
    via_keep = (hooked_fn *)k.entry;
    /* The site now jumps (rel32) to its stub. */
    const struct store_site *site = &stores.sites[0];
    int32_t rel;
    memcpy(&rel, (const void *)(site->at + 1), 4);
    store_stub = site->at + 5 + (uintptr_t)(intptr_t)rel;
    store_resume = site->at + site->length;
    *e.original = (void *)hooked_entry;
    *f.original = (void *)hooked_full;
    entry_stub = e.entry;
    entry_stub_end = e.entry + e.size;
    full_stub = f.entry;
    full_stub_end = f.entry + f.size;
    return_stub = f.return_stub - 1;   /* its first byte, never run */
    return_stub_end = f.entry;         /* padding up to the entry stub is never run */
    via_entry = (hooked_fn *)e.entry;
    via_full = (hooked_fn *)f.entry;
    long n = argc > 1 ? atol(argv[1]) : 1;
    long total = caller(n);
    /* 1 call: (0*10 + 2) + (0*100 + 3) + (0*1000 + 4) */
    printf("total %ld pre %ld post %ld stored %ld regions %zu\n", total, pre_calls, post_calls, stored,
           jit_registered_regions());
    /* A stub made after the debugger set breakpoints in the region's pages
     * (their private copies must get the new code too). */
    struct intercept_stub late;
    if (intercept_entry_stub(3, "hooked_late", pre_handler, 0, &late) != 0)
        return 1;
    *late.original = (void *)hooked_entry;
    long late_result = ((hooked_fn *)late.entry)(4, 5);
    printf("late stub %s\n", late_result == 46 ? "ok" : "wrong");
    return n == 1 && total != 9 ? 1 : 0;
}
