/* The preloaded probe's interface, looked up by the test program with dlsym. */
#ifndef MEMPROF_TESTS_GOT_PROBE_H
#define MEMPROF_TESTS_GOT_PROBE_H
#include <stddef.h>
#include <stdint.h>

struct probe_slot {
    uintptr_t *slot;
    uintptr_t value;
    uintptr_t object_start, object_end;
    const char *object;
};

enum { PROBE_A, PROBE_B, PROBE_C /* the batch's */ };

typedef int probe_hook_fn(int which);            /* 0 or -1 */
typedef void probe_unhook_fn(int which);
typedef long probe_calls_fn(int which);
/* got_hook_retarget of hook `which` to its second entry (`second`), or back. */
typedef int probe_retarget_fn(int which, int second);
typedef const char *probe_trail_fn(void);        /* hook order of the last call */
typedef size_t probe_slots_fn(const char *symbol, struct probe_slot *out, size_t max);
typedef size_t probe_patched_fn(void);
/* got_hooks_install/remove of the first n hooks of a batch whose second
 * names a missing function. */
typedef int probe_hook_batch_fn(size_t n);
typedef void probe_unhook_batch_fn(size_t n);
/* Relocations for `symbol` in the object's file on disk (libelf), -1 if unreadable. */
typedef long probe_file_slots_fn(const char *path, const char *symbol);
/* Address of `symbol` found through each defining object's hash table
 * (DT_GNU_HASH or DT_HASH); `hash_kinds` gets "gnu" or "sysv" for the first. */
typedef uintptr_t probe_lookup_fn(const char *symbol, const char **hash_kind);
#endif
