/* C++'s operator new, every variant: a `new` charged to its own call site.
 *
 * libstdc++'s operator new allocates with malloc (aligned_alloc for the
 * aligned variants) through its own GOT, so the heap tracer already sees
 * the block, but at a site inside operator new. The hook only says whose
 * call that malloc is: the caller of new, for a size in [size, size+align).
 * The nothrow and array variants call the plain one through the PLT: the
 * outermost new charges, the inner ones leave its charge alone. delete
 * calls free, which the heap tracer records as any free. A new that throws
 * leaves its charge behind, and the next allocation of another size drops
 * it. Installed when the process has libstdc++ when the heap tracer starts. */
#include "heap.h"
#include "heap_cxx.h"
#include "../../hook/got.h"
#include <dlfcn.h>
#include <stddef.h>

/* The C++ prototypes, in C: align_val_t is a size_t enum, nothrow_t const& a
 * pointer. */
typedef void *cxx_new_fn(size_t size);
typedef void *cxx_new_nothrow_fn(size_t size, const void *nothrow);
typedef void *cxx_new_aligned_fn(size_t size, size_t align);
typedef void *cxx_new_aligned_nothrow_fn(size_t size, size_t align, const void *nothrow);

/* Every operator new (x86-64 mangling), once. */
#define CXX_NEW_HOOKS(X)                                                                        \
    X(_Znwm, cxx_new_fn, (size_t size), (size), 1)                                             \
    X(_Znam, cxx_new_fn, (size_t size), (size), 1)                                             \
    X(_ZnwmRKSt9nothrow_t, cxx_new_nothrow_fn, (size_t size, const void *nt), (size, nt), 1)   \
    X(_ZnamRKSt9nothrow_t, cxx_new_nothrow_fn, (size_t size, const void *nt), (size, nt), 1)   \
    X(_ZnwmSt11align_val_t, cxx_new_aligned_fn, (size_t size, size_t align), (size, align), align) \
    X(_ZnamSt11align_val_t, cxx_new_aligned_fn, (size_t size, size_t align), (size, align), align) \
    X(_ZnwmSt11align_val_tRKSt9nothrow_t, cxx_new_aligned_nothrow_fn,                          \
      (size_t size, size_t align, const void *nt), (size, align, nt), align)                    \
    X(_ZnamSt11align_val_tRKSt9nothrow_t, cxx_new_aligned_nothrow_fn,                          \
      (size_t size, size_t align, const void *nt), (size, align, nt), align)

#define DEFINE_NEW_HOOK(name, fn_type, params, args, slack)                          \
    static fn_type *next_##name;                                                     \
    static fn_type hook_##name;                                                      \
    static void *hook_##name params                                                  \
    {                                                                                \
        bool mine = heap_charge_begin(__builtin_return_address(0), size ? size : 1,  \
                                      (size ? size : 1) + (slack) - 1);              \
        void *p = next_##name args;                                                  \
        if (mine)                                                                    \
            heap_charge_end();                                                       \
        return p;                                                                    \
    }
CXX_NEW_HOOKS(DEFINE_NEW_HOOK)

#define HOOK_ENTRY(name, fn_type, params, args, slack) \
    { .symbol = #name, .replacement = (void *)hook_##name, .next = (void **)&next_##name },
static struct got_hook hooks[] = { CXX_NEW_HOOKS(HOOK_ENTRY) };
#define HOOK_COUNT (sizeof hooks / sizeof hooks[0])

static bool installed;

bool heap_cxx_start(void)
{
    if (installed || !dlsym(RTLD_DEFAULT, "_Znwm"))
        return true;   /* no libstdc++: nothing to hook */
    installed = got_hooks_install(hooks, HOOK_COUNT) == 0;
    return installed;
}

void heap_cxx_stop(void)
{
    if (installed)
        got_hooks_remove(hooks, HOOK_COUNT);
    installed = false;
}
