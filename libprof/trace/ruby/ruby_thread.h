/* Which Ruby execution context is this thread's, by the VM's own word.
 *
 * ruby_current_ec (static TLS) alone proves nothing: Ruby 3.1 keeps a
 * finished thread's native thread for the next Thread.new, and until the VM
 * sets the variable again it names the finished thread's context, whose
 * memory may hold anything by then (native_thread_init_stack allocates in
 * that window). A hook that runs on any thread at any time (malloc's) takes
 * the context only when the VM vouches for this thread:
 * - the main thread: rb_vm_t's ractor.main_thread is this thread (the VM
 *   clears that pointer before it frees the thread);
 * - any other: the thread holding the main ractor's GVL is this thread (a
 *   thread cannot finish while it holds it);
 * and that thread's ec is the TLS word. The one word read of a thread before
 * it is known to be this one is the GVL owner's thread id: a thread that does
 * not hold the GVL reads it racing the owner, whose struct is freed only by a
 * GC of its Thread object, which needs the GVL.
 *
 * The Ruby tracer's allocation hooks do not need this: the VM allocates an
 * object only holding the GVL, with the context it reads from the same TLS. */
#ifndef MEMPROF_TRACE_RUBY_THREAD_H
#define MEMPROF_TRACE_RUBY_THREAD_H
#include "ruby_state.h"
#include <stdint.h>

enum ruby_layout_state { RUBY_LAYOUT_UNKNOWN, RUBY_LAYOUT_OK, RUBY_LAYOUT_OTHER };
extern enum ruby_layout_state ruby_layout;
/* Check ruby_abi.h's thread offsets against the running VM: on the main
 * thread while it holds the GVL; until then the state stays unknown. */
void ruby_layout_check(const struct ruby_api *api);

/* A word of the VM's, read once (another thread may be writing it). */
static inline const char *ruby_word_at(const char *base, size_t offset)
{
    return *(const char *const volatile *)(base + offset);
}

/* The main ractor's GVL owner (its rb_thread_t) if it is this thread, else
 * NULL; *ractor: the main ractor (NULL once a second one exists). */
static inline const char *ruby_gvl_owner_if_self(const struct ruby_api *api, const char **ractor)
{
    *ractor = __atomic_load_n((const char *const *)api->ruby_single_main_ractor, __ATOMIC_RELAXED);
    const char *th = *ractor ? ruby_word_at(*ractor, RUBY_RACTOR_GVL_OWNER_OFFSET) : NULL;
    return th && (uintptr_t)ruby_word_at(th, RUBY_THREAD_ID_OFFSET) == cpu_pthread_self() ? th : NULL;
}

/* This thread's execution context if the VM vouches for it (see above),
 * else NULL: no VM, not a Ruby thread, a thread between two Ruby threads, a
 * thread other than main that does not hold the GVL (in a blocking region),
 * or a second ractor. */
static inline const char *ruby_thread_live_ec(const struct ruby_api *api)
{
    const char *ec = ruby_site_current_ec();
    if (__builtin_expect(!ec, 0))
        return NULL;
    if (__builtin_expect(__atomic_load_n(&ruby_layout, __ATOMIC_ACQUIRE) != RUBY_LAYOUT_OK, 0)) {
        ruby_layout_check(api);
        if (__atomic_load_n(&ruby_layout, __ATOMIC_ACQUIRE) != RUBY_LAYOUT_OK)
            return NULL;
    }
    const char *vm = *(const char *const *)api->ruby_current_vm_ptr;   /* set long before a TLS context */
    if (!vm)
        return NULL;
    const char *th = ruby_word_at(vm, RUBY_VM_MAIN_THREAD_OFFSET);
    if (!th || (uintptr_t)ruby_word_at(th, RUBY_THREAD_ID_OFFSET) != cpu_pthread_self()) {
        const char *ractor;
        if (!(th = ruby_gvl_owner_if_self(api, &ractor)))
            return NULL;
    }
    return ruby_word_at(th, RUBY_THREAD_EC_OFFSET) == ec ? ec : NULL;
}

/* Does this thread hold the main ractor's GVL? (The GC runs holding it.) */
static inline bool ruby_thread_holds_gvl(const struct ruby_api *api)
{
    if (__atomic_load_n(&ruby_layout, __ATOMIC_ACQUIRE) != RUBY_LAYOUT_OK)
        return api->ruby_thread_has_gvl_p();
    const char *ractor;
    return ruby_gvl_owner_if_self(api, &ractor) || (!ractor && api->ruby_thread_has_gvl_p());
}
#endif
