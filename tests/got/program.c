/* The GOT walker and patcher on one link variant (PIE or not, lazy or
 * BIND_NOW, partial or full RELRO, -fno-plt: chosen by the build).
 * Run with the probe preloaded; prints TAP. */
#include "probe.h"
#include "../tap.h"
#include <dlfcn.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern int target_add(int a, int b);

#define MAX_SLOTS 32

static void *need(const char *name)
{
    void *p = dlsym(RTLD_DEFAULT, name);
    if (!p) {
        printf("Bail out! %s not found: run with the probe in LD_PRELOAD\n", name);
        exit(1);
    }
    return p;
}

static const char *file_of(const struct probe_slot *s)
{
    static char self[PATH_MAX];
    if (s->object[0])
        return s->object;
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = '\0';
    return self;
}

int main(void)
{
    probe_hook_fn *hook = need("probe_hook");
    probe_unhook_fn *unhook = need("probe_unhook");
    probe_calls_fn *calls = need("probe_calls");
    probe_trail_fn *trail = need("probe_trail");
    probe_slots_fn *slots = need("probe_slots");
    probe_patched_fn *patched = need("probe_patched");
    probe_file_slots_fn *file_slots = need("probe_file_slots");
    probe_lookup_fn *lookup = need("probe_lookup");
    probe_hook_batch_fn *hook_batch = need("probe_hook_batch");
    probe_unhook_batch_fn *unhook_batch = need("probe_unhook_batch");
    probe_retarget_fn *retarget = need("probe_retarget");

    /* The walker finds exactly the slots the files' relocations name. */
    struct probe_slot before[MAX_SLOTS];
    size_t nbefore = slots("target_add", before, MAX_SLOTS);
    ok(nbefore >= 1, "the program's GOT has a slot for target_add (%zu found)", nbefore);
    const char *last = NULL;
    for (size_t i = 0; i < nbefore; i++) {
        if (last == before[i].object)
            continue;
        last = before[i].object;
        size_t in_memory = 0;
        for (size_t j = 0; j < nbefore; j++)
            in_memory += before[j].object == last;
        long on_disk = file_slots(file_of(&before[i]), "target_add");
        ok(on_disk == (long)in_memory, "%s: %zu slots in memory, %ld relocations on disk",
           file_of(&before[i]), in_memory, on_disk);
    }

    /* No call before hooking: under lazy binding the slots still hold PLT
     * stubs, and unhooking must give back exactly those. */
    ok(hook(PROBE_A) == 0, "hook A installs");
    ok(target_add(2, 3) == 5, "hooked call returns the original's result");
    ok(calls(PROBE_A) == 1, "hook A saw the program's call");
    trail();

    void *plugin = dlopen(PLUGIN_PATH, RTLD_LAZY);
    ok(plugin != NULL, "plugin dlopen'ed after hooking (%s)", plugin ? "ok" : dlerror());
    if (!plugin)
        return tap_done();
    int (*plugin_call)(int, int) = (int (*)(int, int))dlsym(plugin, "plugin_call");

    /* The hash-table lookup agrees with the dynamic linker, for the target
     * (GNU hash) and for the plugin (built with a SysV hash table only). */
    const char *kind = "";
    ok(lookup("target_add", &kind) == (uintptr_t)dlsym(RTLD_DEFAULT, "target_add") &&
       strcmp(kind, "gnu") == 0, "target_add found through DT_GNU_HASH (%s)", kind);
    ok(lookup("plugin_call", &kind) == (uintptr_t)plugin_call && strcmp(kind, "sysv") == 0,
       "plugin_call found through DT_HASH (%s)", kind);
    ok(lookup("memprof_no_such_symbol", &kind) == 0, "an unknown name is not found");
    ok(plugin_call(4, 5) == 9 && calls(PROBE_A) == 2, "the dlopen'ed plugin's call is hooked too");
    trail();

    ok(hook(PROBE_B) == 0, "a second hook on the same function installs");
    ok(target_add(1, 1) == 2 && plugin_call(1, 1) == 2, "chained calls still return the right value");
    ok(calls(PROBE_A) == 4 && calls(PROBE_B) == 2, "both hooks see both calls");
    ok(strcmp(trail(), "BABA") == 0, "the newest hook runs first, then the older one");

    unhook(PROBE_A);
    ok(target_add(1, 2) == 3 && calls(PROBE_A) == 4 && calls(PROBE_B) == 3,
       "removing the older hook leaves the newer one working");
    ok(strcmp(trail(), "B") == 0, "only B runs after A is removed");

    unhook(PROBE_B);
    ok(patched() == 0, "no slot is left redirected");

    struct probe_slot after[MAX_SLOTS];
    size_t nafter = slots("target_add", after, MAX_SLOTS);
    size_t restored = 0, plugin_ok = 0, plugin_slots = 0;
    void *real = dlsym(RTLD_DEFAULT, "target_add");
    for (size_t i = 0; i < nafter; i++) {
        bool known = false;
        for (size_t j = 0; j < nbefore; j++)
            if (before[j].slot == after[i].slot) {
                known = true;
                restored += before[j].value == after[i].value;
            }
        if (!known) {
            /* Loaded after the snapshot: back to the function, or to its own
             * PLT stub if lazy binding had not resolved it yet. */
            plugin_slots++;
            plugin_ok += after[i].value == (uintptr_t)real ||
                         (after[i].value >= after[i].object_start && after[i].value < after[i].object_end);
        }
    }
    ok(restored == nbefore, "every slot holds its original value again (%zu of %zu)", restored, nbefore);
    ok(plugin_slots >= 1 && plugin_ok == plugin_slots, "the plugin's slots are restored (%zu of %zu)",
       plugin_ok, plugin_slots);
    /* Only now call again (which lets lazy binding resolve the slots). */
    ok(target_add(1, 2) == 3 && plugin_call(1, 2) == 3 && calls(PROBE_A) == 4 && calls(PROBE_B) == 3,
       "after removing all hooks calls go straight through");

    /* Several hooks in one pass: all or none. */
    ok(hook_batch(2) == -1 && patched() == 0, "a batch with an unknown function installs none of its hooks");
    ok(target_add(2, 2) == 4 && calls(PROBE_C) == 0, "the batch's other hook is not called");
    ok(hook_batch(1) == 0 && patched() >= nbefore, "a batch of known functions installs (%zu slots)", patched());
    ok(target_add(2, 2) == 4 && plugin_call(2, 2) == 4 && calls(PROBE_C) == 2,
       "the batch's hook sees the program's and the plugin's calls");
    unhook_batch(1);
    ok(patched() == 0 && target_add(1, 1) == 2 && calls(PROBE_C) == 2, "removing the batch restores every slot");

    /* A hook given another entry while installed (the C heap's hooks per
     * mode): the slots of the program and the plugin, and the hook chained
     * above it, reach the new entry; removal still restores every slot. */
    trail();
    ok(hook(PROBE_A) == 0 && retarget(PROBE_A, 1) == 0, "hook A installs and takes its second entry");
    ok(target_add(1, 1) == 2 && plugin_call(1, 1) == 2 && strcmp(trail(), "aa") == 0,
       "the program's and the plugin's calls reach the second entry");
    ok(hook(PROBE_B) == 0 && target_add(1, 1) == 2 && strcmp(trail(), "Ba") == 0,
       "a hook installed above calls the second entry");
    ok(retarget(PROBE_A, 0) == 0 && target_add(1, 1) == 2 && strcmp(trail(), "BA") == 0,
       "the hook above follows A back to its first entry");
    unhook(PROBE_B);
    ok(retarget(PROBE_A, 1) == 0 && target_add(2, 1) == 3 && plugin_call(2, 1) == 3 && strcmp(trail(), "aa") == 0,
       "the slots B gave back to A follow A's entry");
    unhook(PROBE_A);
    long before_calls = calls(PROBE_A);
    ok(patched() == 0 && target_add(3, 1) == 4 && plugin_call(3, 1) == 4 && calls(PROBE_A) == before_calls,
       "removing A after its entry changed restores every slot");
    return tap_done();
}
