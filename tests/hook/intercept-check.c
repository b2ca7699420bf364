/* The interceptor's entry stub (libprof/hook/intercept.c), hooked through the
 * GOT: the pre-handler sees the hook id and every argument register, can
 * change them, and the original runs with what it left; callee-saved
 * registers survive; 8 threads lose no call. TAP. */
#include "hook/intercept.h"
#include "../tap.h"
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

long target_sum6(long a, long b, long c, long d, long e, long f);
double target_scale(double x, double y);
double target_sum_doubles(int n, ...);

static struct intercept_regs last;
static uint32_t last_id;
static unsigned long calls;
static bool change_first;

static void pre(uint32_t id, struct intercept_regs *regs)
{
    last = *regs;
    last_id = id;
    __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
    if (change_first)
        regs->rdi = 100;
}

static double xmm_double(int i)
{
    double d;
    memcpy(&d, &last.xmm[i].lo, sizeof d);
    return d;
}

void call_sum6_keeping(long out[5]);
int driver_hook(const char *symbol, uint32_t id, intercept_pre_fn *pre, uintptr_t near, size_t *stub_size);
void driver_unhook_all(void);

/* Calls the hooked function with values in every callee-saved register and
 * checks they come back (the stub may touch only caller-saved ones). */
static bool callee_saved_survive(void)
{
    long out[5];
    call_sum6_keeping(out);
    return out[0] == 0x1111 && out[1] == 0x1212 && out[2] == 0x1313 && out[3] == 0x1414 && out[4] == 0x1515;
}

static void *call_many(void *arg)
{
    (void)arg;
    for (int i = 0; i < 10000; i++)
        if (target_sum6(1, 0, 0, 0, 0, 0) != 1)
            return arg;
    return NULL;
}

int main(void)
{
    uintptr_t near = (uintptr_t)&main;
    size_t size = 0;
    ok(driver_hook("target_sum6", 7, pre, near, &size) == 0 && driver_hook("target_scale", 8, pre, near, &size) == 0 &&
           driver_hook("target_sum_doubles", 9, pre, near, &size) == 0,
       "three functions hooked through the GOT with entry stubs (%zu bytes each)", size);

    long r = target_sum6(1, 2, 3, 4, 5, 6);
    ok(r == 91, "target_sum6 still returns 91 (%ld)", r);
    ok(last_id == 7, "the handler gets the hook's id (%u)", last_id);
    ok(last.rdi == 1 && last.rsi == 2 && last.rdx == 3 && last.rcx == 4 && last.r8 == 5 && last.r9 == 6,
       "and the six integer arguments");
    double d = target_scale(2.5, 4.0);
    ok(d == 10.0 && last_id == 8 && xmm_double(0) == 2.5 && xmm_double(1) == 4.0,
       "floating-point arguments in xmm0 and xmm1; the result is right (%g)", d);
    d = target_sum_doubles(8, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0);
    ok(d == 36.0 && last_id == 9 && last.rax == 8 && xmm_double(7) == 8.0,
       "varargs: %%al (8 vector registers) and xmm7 pass through (%g)", d);
    change_first = true;
    r = target_sum6(1, 2, 3, 4, 5, 6);
    change_first = false;
    ok(r == 190, "a handler that changes rdi to 100 changes the call (%ld)", r);
    ok(callee_saved_survive(), "rbx, r12-r15 survive a call through the stub");

    calls = 0;
    pthread_t t[8];
    for (int i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, call_many, NULL);
    bool all_right = true;
    for (int i = 0; i < 8; i++) {
        void *res;
        pthread_join(t[i], &res);
        all_right &= res == NULL;
    }
    ok(all_right && calls == 80000, "8 threads x 10000 calls: all right, all seen (%lu)", calls);

    driver_unhook_all();
    calls = 0;
    ok(target_sum6(1, 2, 3, 4, 5, 6) == 91 && calls == 0, "unhooked: the original, no handler");
    return tap_done();
}
