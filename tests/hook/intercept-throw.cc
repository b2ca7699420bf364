// A C++ exception thrown through functions hooked with full stubs (entry
// and return): it reaches its handler, the shadow stack is emptied, and the
// hooks keep working. TAP.
#include "hook/intercept.h"
#include <cstdio>
#include <cstring>
#include <stdexcept>

extern "C" {
int target_throw(int n);
int target_throw_nested(int n);
int driver_hook_full(const char *symbol, uint32_t id, intercept_pre_fn *pre, intercept_post_fn *post, uintptr_t near);
size_t driver_shadow_depth(void);
void driver_unhook_all(void);
}

static unsigned long returns, entries;
static void pre(uint32_t, struct intercept_regs *) { entries++; }
static void post(uint32_t, const struct intercept_return *, const uint64_t *) { returns++; }

static int count, failed;
static void ok(bool cond, const char *what)
{
    std::printf("%sok %d - %s\n", cond ? "" : "not ", ++count, what);
    failed += !cond;
}

int main()
{
    ok(driver_hook_full("target_throw", 1, pre, post, (uintptr_t)&main) == 0 &&
           driver_hook_full("target_throw_nested", 2, pre, post, (uintptr_t)&main) == 0,
       "two C++ functions hooked with full stubs");
    ok(target_throw_nested(4) == 9 && returns == 2, "normal returns through both return stubs");
    returns = entries = 0;
    bool caught = false;
    try {
        target_throw_nested(-1);
    } catch (const std::runtime_error &e) {
        caught = std::strcmp(e.what(), "thrown through a hooked frame") == 0;
    }
    ok(caught, "the exception thrown through two hooked frames reaches its handler");
    ok(entries == 2 && returns == 0 && driver_shadow_depth() == 0,
       "both frames were entered, neither returned, and the shadow stack is empty");
    ok(target_throw_nested(5) == 11 && returns == 2, "the hooks keep working after it");
    for (int i = 0; i < 1000; i++) {
        try {
            target_throw(-i - 1);
        } catch (const std::exception &) {
        }
    }
    ok(driver_shadow_depth() == 0 && target_throw(1) == 2, "1000 more throws: no frame left over");
    driver_unhook_all();
    std::printf("1..%d\n", count);
    return failed ? 1 : 0;
}
