/* bt through memprof's stubs with many of them registered: STUBS full stubs
 * (GDB sees their symfiles), DEPTH of them on the stack (a recursion whose
 * every call goes through a different stub), then a stop for the debugger.
 * With "plain", the same recursion without stubs. */
#include "hook/intercept.h"
#include "hook/jit.h"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef long level_fn(long depth, long stride);
static level_fn **via;    /* one stub per slot */
static long stubs;

__attribute__((noinline)) long level(long depth, long stride)
{
    if (depth == 0) {
        raise(SIGTRAP);   /* the debugger's stop */
        return 0;
    }
    level_fn *next = via ? via[(depth * stride) % stubs] : level;
    return next(depth - 1, stride) + 1;
}

static void post(uint32_t id, const struct intercept_return *ret, const uint64_t data[2])
{
    (void)id, (void)ret, (void)data;
}

static void pre(uint32_t id, struct intercept_regs *regs)
{
    (void)id, (void)regs;
}

int main(int argc, char **argv)
{
    stubs = argc > 1 ? atol(argv[1]) : 10000;
    long depth = argc > 2 ? atol(argv[2]) : 100;
    if (argc > 3 && strcmp(argv[3], "plain") == 0) {
        printf("levels %ld\n", level(depth, 1));
        return 0;
    }
    via = calloc((size_t)stubs, sizeof *via);
    jit_hold();   /* one registration per region, not one per stub */
    for (long i = 0; i < stubs; i++) {
        struct intercept_stub s;
        char name[32];
        snprintf(name, sizeof name, "level_%ld", i);
        if (!via || intercept_full_stub((uint32_t)i, name, pre, post, 0, &s) != 0) {
            fprintf(stderr, "jitbt: cannot make stub %ld\n", i);
            return 1;
        }
        *s.original = (void *)level;
        via[i] = (level_fn *)s.entry;
    }
    jit_release();
    printf("stubs %ld regions %zu\n", stubs, jit_registered_regions());
    fflush(stdout);
    printf("levels %ld\n", level(depth, 97));
    return 0;
}
