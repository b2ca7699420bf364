/* The interceptor's entry stub (libprof/hook/intercept.c), hooked through the
 * GOT: the pre-handler sees the hook id and every argument register, can
 * change them, and the original runs with what it left; callee-saved
 * registers survive; 8 threads lose no call. TAP. */
#include "hook/intercept.h"
#include "../tap.h"
#include <pthread.h>
#include <stdbool.h>
#include <setjmp.h>
#include <string.h>

long target_sum6(long a, long b, long c, long d, long e, long f);
double target_scale(double x, double y);
double target_sum_doubles(int n, ...);

static struct intercept_regs last;
static uint32_t last_id;
static unsigned long calls;
static bool change_first;

static uintptr_t pre_caller;
uintptr_t driver_caller(const struct intercept_regs *regs);

static void pre(uint32_t id, struct intercept_regs *regs)
{
    last = *regs;
    last_id = id;
    pre_caller = driver_caller(regs);
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
int driver_hook_full(const char *symbol, uint32_t id, intercept_pre_fn *pre, intercept_post_fn *post, uintptr_t near);
size_t driver_shadow_depth(void);
uint64_t *driver_call_data(void);
long target_via(long n, long (*back)(long));
int target_call(void (*cb)(void));

/* --- full stubs: the return too ---------------------------------------- */
static unsigned long returns;
static struct intercept_return last_return;
static uint32_t last_return_id;

static uint64_t last_data[2];

static void post(uint32_t id, const struct intercept_return *ret, const uint64_t data[2])
{
    __atomic_fetch_add(&returns, 1, __ATOMIC_RELAXED);
    last_return = *ret;
    last_return_id = id;
    last_data[0] = data[0];
    last_data[1] = data[1];
}

/* A pre-handler that keeps the caller, and words for the post-handler. */
static void pre_keeping(uint32_t id, struct intercept_regs *regs)
{
    pre_caller = driver_caller(regs);
    uint64_t *data = driver_call_data();
    if (data) {
        data[0] = id * 7u;
        data[1] = pre_caller;
    }
}

__attribute__((noinline)) static double sum_doubles_from_here(void)
{
    double d = target_sum_doubles(2, 1.0, 2.0);
    __asm__ volatile("" ::: "memory");
    return d;
}

__attribute__((noinline)) static long sum6_from_here(void)
{
    long r = target_sum6(1, 2, 3, 4, 5, 6);
    __asm__ volatile("" ::: "memory");
    return r;
}

static void pre_quiet(uint32_t id, struct intercept_regs *regs)
{
    (void)id, (void)regs;
}

/* n levels of recursion through the hooked target_via. */
static long down(long n)
{
    return n == 0 ? 0 : 1 + target_via(n - 1, down);
}

static jmp_buf escape;
static void jump_out(void)
{
    longjmp(escape, 1);
}

static __thread size_t thread_depth_after;
static void *recurse_in_thread(void *arg)
{
    long sum = 0;
    for (int i = 0; i < 100; i++)
        sum += down(100);
    thread_depth_after = driver_shadow_depth();
    return sum == 100 * 100 && thread_depth_after == 0 ? NULL : arg;
}

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

    long r = sum6_from_here();
    ok(r == 91, "target_sum6 still returns 91 (%ld)", r);
    ok(pre_caller > (uintptr_t)sum6_from_here && pre_caller < (uintptr_t)sum6_from_here + 64,
       "the pre-handler is told its caller: sum6_from_here + %ld", (long)(pre_caller - (uintptr_t)sum6_from_here));
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

    ok(driver_hook_full("target_sum6", 17, pre, post, near) == 0 && driver_hook_full("target_scale", 18, pre, post, near) == 0 &&
           driver_hook_full("target_via", 19, pre_quiet, post, near) == 0 &&
           driver_hook_full("target_call", 20, pre_quiet, post, near) == 0,
       "full stubs (entry and return) on four functions");
    returns = 0;
    r = target_sum6(1, 2, 3, 4, 5, 6);
    ok(r == 91 && returns == 1 && last_return_id == 17 && last_return.rax == 91,
       "the post-handler sees the integer result in rax (%lu)", (unsigned long)last_return.rax);
    ok(driver_hook_full("target_sum_doubles", 21, pre_keeping, post, near) == 0, "a full stub whose pre-handler keeps data");
    pre_caller = 0;
    r = (long)sum_doubles_from_here();
    ok(r == 3 && pre_caller > (uintptr_t)sum_doubles_from_here && pre_caller < (uintptr_t)sum_doubles_from_here + 64,
       "a full stub's pre-handler is told the real caller, not the return stub");
    ok(last_return_id == 21 && last_data[0] == 21 * 7 && last_data[1] == pre_caller,
       "the post-handler gets the two words its pre-handler kept");
    returns = 1;
    d = target_scale(2.5, 4.0);
    double x0;
    memcpy(&x0, &last_return.xmm[0].lo, sizeof x0);
    ok(d == 10.0 && last_return_id == 18 && x0 == 10.0, "and the floating-point result in xmm0 (%g)", x0);
    ok(callee_saved_survive() && returns == 3, "rbx, r12-r15 survive the return stub too");
    returns = 0;
    r = down(1000);
    ok(r == 1000 && returns == 1000 && driver_shadow_depth() == 0,
       "1000 levels of recursion: each returns to its caller, 1000 post-handler calls (%lu)", returns);
    returns = 0;
    if (setjmp(escape) == 0)
        target_call(jump_out);
    ok(returns == 0 && driver_shadow_depth() == 1, "longjmp out of a hooked call: no return seen, one stale frame");
    ok(target_sum6(1, 2, 3, 4, 5, 6) == 91 && returns == 1 && driver_shadow_depth() == 0,
       "the next hooked call drops the stale frame and returns right");
    returns = 0;
    if (setjmp(escape) == 0)
        target_via(3, (long (*)(long))(void (*)(void))jump_out);
    r = down(10);
    ok(r == 10 && returns == 10 && driver_shadow_depth() == 0,
       "after a longjmp out of nested frames, recursion still returns right");
    returns = 0;
    for (int i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, recurse_in_thread, (void *)1);
    all_right = true;
    for (int i = 0; i < 8; i++) {
        void *res;
        pthread_join(t[i], &res);
        all_right &= res == NULL;
    }
    ok(all_right && returns == 8 * 100 * 100, "8 threads recursing 100 deep, 100 times: every return right (%lu)", returns);
    driver_unhook_all();
    return tap_done();
}
