/* The hooking side of intercept-check, in a library of its own: memprof
 * never patches the object its own code is in, so the program that calls
 * the hooked functions must be another object. */
#include "hook/got.h"
#include "hook/intercept.h"

#define MAX_HOOKS 8
static struct got_hook hooks[MAX_HOOKS];
static int hook_count;

/* Send calls of `symbol` to a stub made by `made` (its return code): 0, or -1. */
static int install(const char *symbol, int made, const struct intercept_stub *stub)
{
    if (made != 0 || hook_count == MAX_HOOKS)
        return -1;
    struct got_hook *h = &hooks[hook_count];
    *h = (struct got_hook){ .symbol = symbol, .replacement = (void *)stub->entry, .next = stub->original };
    if (got_hook_install(h) != 0)
        return -1;
    hook_count++;
    return 0;
}

/* Hook `symbol` with an entry stub near `near`: 0, or -1. */
__attribute__((visibility("default"))) int driver_hook(const char *symbol, uint32_t id, intercept_pre_fn *pre,
                                                        uintptr_t near, size_t *stub_size)
{
    struct intercept_stub stub = { 0 };
    int made = intercept_entry_stub(id, symbol, pre, near, &stub);
    *stub_size = stub.size;
    return install(symbol, made, &stub);
}

__attribute__((visibility("default"))) void driver_unhook_all(void)
{
    while (hook_count > 0)
        got_hook_remove(&hooks[--hook_count]);
}

/* The same with a full stub (the post-handler sees the return). */
__attribute__((visibility("default"))) int driver_hook_full(const char *symbol, uint32_t id, intercept_pre_fn *pre,
                                                             intercept_post_fn *post, uintptr_t near)
{
    struct intercept_stub stub = { 0 };
    return install(symbol, intercept_full_stub(id, symbol, pre, post, near, &stub), &stub);
}

__attribute__((visibility("default"))) size_t driver_shadow_depth(void)
{
    return intercept_shadow_depth();
}

__attribute__((visibility("default"))) uintptr_t driver_caller(const struct intercept_regs *regs)
{
    return intercept_caller(regs);
}

__attribute__((visibility("default"))) uint64_t *driver_call_data(void)
{
    return intercept_call_data();
}
