/* The seeds' situation in a small C "VM": a static allocator, newobj(),
 * called from several sites (no GOT slot reaches it), callers that keep
 * values in registers across the calls. memprof finds every call of it by
 * decoding the program's functions (from .symtab), points them at a stub
 * that keeps every register, counts the calls per call site, and restores
 * the code byte for byte. Built -O0 and -O2 by callsite.test. (TAP) */
#include "objfile/symbolizer.h"
#include "objfile/symbols.h"
#include "hook/callsite.h"
#include "hook/intercept.h"
#include "../seeds_vm.h"
#include "../tap.h"
#include <errno.h>
#include <link.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>


/* Expected calls per source line, counted by the call sites themselves. */
static long expected[1024];
#define NEWOBJ(kind) (expected[__LINE__]++, newobj(kind))

__attribute__((noinline, noclone)) static struct obj *newobj(long kind)
{
    return SEEDS_NEWOBJ(kind, 1);
}

static void release(struct obj *o)
{
    SEEDS_ADD_FREELIST(o);
}

/* Many values live across the calls: with -O2 (and -fipa-ra) some stay in
 * registers newobj is known not to touch. */
__attribute__((noinline)) long run_vm(long n)
{
    long sum = 0, a = 1, b = 2, c = 3, d = 4, e = 5;
    for (long i = 0; i < n; i++) {
        struct obj *x = NEWOBJ(1);
        a += x->value + i;
        if (i % 3 == 0) {
            struct obj *y = NEWOBJ(2);
            b ^= y->value + a;
            release(y);
        }
        if (i % 7 == 0) {
            struct obj *z = NEWOBJ(3);
            c += z->value * b;
            d -= c >> 3;
            release(z);
        }
        e += a ^ b ^ c ^ d;
        release(x);
    }
    struct obj *last = NEWOBJ(4);
    sum = a + b + c + d + e + last->value;
    return sum;
}

/* --- the hook: calls per call site ---------------------------------------- */
#define MAX_SITES 64
static struct callsite_patch patch;
static long calls_at[MAX_SITES];

static void count_pre(uint32_t id, struct intercept_regs *regs)
{
    (void)id;
    uint64_t *data = intercept_call_data();
    if (data)
        data[0] = intercept_caller(regs);
}

static void count_post(uint32_t id, const struct intercept_return *ret, const uint64_t data[2])
{
    (void)id, (void)ret;
    for (size_t i = 0; i < patch.count && i < MAX_SITES; i++)
        if (patch.sites[i].at + 5 == data[0])
            calls_at[i]++;
}

static uintptr_t bias;
static int find_bias(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size, (void)arg;
    bias = info->dlpi_addr;   /* the first is the program */
    return 1;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000;
    dl_iterate_phdr(find_bias, NULL);
    char err[256];
    struct symbolizer *sym = symbolizer_open("/proc/self/exe", err, sizeof err);
    ok(sym != NULL, "the program's symbols (%s)", sym ? symbolizer_sources(sym) : err);
    if (!sym)
        return tap_done();
    const struct elf_symbols *table = symbolizer_symbols(sym);
    size_t nfun = elf_symbols_count(table);
    struct code_range *functions = calloc(nfun, sizeof *functions);
    size_t used = 0;
    for (size_t i = 0; i < nfun; i++) {
        const char *name;
        uint64_t start, size;
        elf_symbols_get(table, i, &name, &start, &size);
        if (size)
            functions[used++] = (struct code_range){ bias + start, size };
    }

    long plain = run_vm(n);
    memset(expected, 0, sizeof expected);

    /* The code before: every function's bytes. */
    size_t image_bytes = 0;
    for (size_t i = 0; i < used; i++)
        image_bytes += functions[i].size;
    unsigned char *before = malloc(image_bytes), *after = malloc(image_bytes);
    for (size_t i = 0, at = 0; i < used; at += functions[i].size, i++)
        memcpy(before + at, (const void *)functions[i].start, functions[i].size);

    ok(callsite_find(functions, used, (uintptr_t)newobj, &patch) == 0 && patch.count >= 4 && patch.count <= MAX_SITES,
       "the calls of newobj found by decoding %zu functions: %zu (4 in the source)", used, patch.count);
    struct intercept_stub stub;
    ok(intercept_keeping_stub(1, "newobj", count_pre, count_post, (uintptr_t)newobj, (uintptr_t)newobj, &stub) == 0,
       "a stub that keeps every register, within reach of the program");
    ok(callsite_apply(&patch, stub.entry, patch.count + 1) == ENOENT, "expecting another number of sites is refused");
    bool unchanged = true;
    for (size_t i = 0, at = 0; i < used; at += functions[i].size, i++)
        unchanged = unchanged && memcmp(before + at, (const void *)functions[i].start, functions[i].size) == 0;
    ok(unchanged, "... and patches nothing");
    ok(callsite_apply(&patch, stub.entry, patch.count) == 0, "every call pointed at the stub");
    ok(callsite_apply(&patch, stub.entry, 0) == EEXIST, "applying twice is refused");

    long hooked = run_vm(n);
    ok(hooked == plain, "the VM computes the same through the stub (%ld, %ld): no register lost", hooked, plain);
    /* Calls per source line (the compiler may copy a call site). */
    long total = 0, counted[1024] = { 0 };
    bool all_named = true;
    for (size_t i = 0; i < patch.count; i++) {
        struct symbol_info info;
        symbolizer_lookup(sym, patch.sites[i].at - bias, &info);
        if (info.file && info.line < 1024)
            counted[info.line] += calls_at[i];
        else
            all_named = false;
        total += calls_at[i];
    }
    ok(all_named, "every site has a source line");
    for (unsigned line = 0; line < 1024; line++)
        if (expected[line] || counted[line])
            ok(counted[line] == expected[line], "line %u: %ld calls counted at its sites, %ld made", line,
               counted[line], expected[line]);
    ok(total == n + (n + 2) / 3 + (n + 6) / 7 + 1, "every call counted once (%ld)", total);

    ok(callsite_restore(&patch) == 0, "restored");
    for (size_t i = 0, at = 0; i < used; at += functions[i].size, i++)
        memcpy(after + at, (const void *)functions[i].start, functions[i].size);
    ok(memcmp(before, after, image_bytes) == 0, "every function's bytes equal the original's (%zu bytes)", image_bytes);
    memset(calls_at, 0, sizeof calls_at);
    ok(run_vm(n) == plain && calls_at[0] == 0, "after restoring, calls go straight to newobj");
    callsite_free(&patch);
    symbolizer_close(sym);
    return tap_done();
}
