/* GOT hooking: redirect every loaded object's JUMP_SLOT and GLOB_DAT slots for
 * a function to a replacement, now and in objects dlopen'ed later.
 *
 * The object that holds this code, ld.so and the vdso are never patched, so a
 * replacement reaches the real function through `*next` (taken from dlsym,
 * never from a slot, which under lazy binding may hold a PLT stub).
 * Several hooks may share a function: the newest is called first and its
 * `*next` is the one installed before it. */
#ifndef MEMPROF_HOOK_GOT_H
#define MEMPROF_HOOK_GOT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct got_hook {
    const char *symbol;
    void *replacement;
    void **next;              /* set by got_hook_install; re-set if the chain changes */
    /* private */
    struct got_hook *under;   /* the hook this one calls, NULL for the original */
    bool installed;
};

/* 0 on success; -1 with got_error() set (unknown symbol, out of memory). */
int got_hook_install(struct got_hook *hook);
/* Unchain the hook. When it was the last on its symbol, every slot that still
 * points into the chain gets back the value it had before memprof wrote it. */
void got_hook_remove(struct got_hook *hook);
/* The same for an array of hooks, with one pass over the objects' slots (a
 * pass reads every loaded object's relocations): all are installed or none. */
int got_hooks_install(struct got_hook *hooks, size_t n);
void got_hooks_remove(struct got_hook *hooks, size_t n);
/* Give an installed hook another entry (same type): the slots memprof wrote
 * for it and the hook chained above it reach `replacement` from now on. A
 * call already in the old entry finishes there. 0, or -1 with got_error(). */
int got_hook_retarget(struct got_hook *hook, void *replacement);
/* The same for n hooks, each to the same index's entry: one pass. */
int got_hooks_retarget(struct got_hook *const *hooks, void *const *entries, size_t n);
/* Patch objects loaded since the last pass (called after dlopen). */
void got_hook_refresh(void);
/* How many times objects were loaded (dlopen) while hooks were installed:
 * a cache of anything keyed by code address is stale when it changes.
 * Inline: the C heap hooks read it on every allocation with a backtrace. */
extern uint64_t got_objects_loaded;
static inline uint64_t got_objects_generation(void)
{
    return __atomic_load_n(&got_objects_loaded, __ATOMIC_ACQUIRE);
}

const char *got_error(void);
/* Slots currently redirected (for status reports and tests). */
size_t got_patched_slot_count(void);
#endif
