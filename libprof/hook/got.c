#include "got.h"
#include "slot.h"
#include "../objfile/hash.h"
#include "../objfile/object.h"
#include "../objfile/reloc.h"
#include "../util/maps.h"
#include "../util/pages.h"
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MAX_SYMBOLS 64
#define MAX_OBJECTS 1024

/* One hooked function: where its chain starts and what it ends in. */
struct hooked_symbol {
    char first;              /* name[0]: most slots' names differ there */
    const char *name;
    void *original;          /* real_definition(name) */
    struct got_hook *top;    /* NULL: no hook left, slots restored */
};

/* A slot memprof wrote, with the value it held before. */
struct patched_slot {
    uintptr_t *slot;
    uintptr_t original;
    unsigned symbol;         /* index into symbols[] */
};

static pthread_mutex_t got_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hooked_symbol symbols[MAX_SYMBOLS];
static unsigned symbol_count;
static struct patched_slot *slots;
static size_t slot_count, slot_bytes;
static struct elf_object *objects;   /* scratch for snapshots, under got_lock */
static char error_text[256];

static void *(*real_dlopen)(const char *, int);
static void *watch_dlopen(const char *file, int mode);
static struct got_hook dlopen_hook = {
    .symbol = "dlopen", .replacement = (void *)watch_dlopen, .next = (void **)&real_dlopen,
};
static bool user_hooks_active(void);

const char *got_error(void)
{
    return error_text;
}

static void set_error(const char *what, const char *symbol)
{
    snprintf(error_text, sizeof error_text, "%s: %s", symbol, what);
}

size_t got_patched_slot_count(void)
{
    pthread_mutex_lock(&got_lock);
    size_t n = slot_count;
    pthread_mutex_unlock(&got_lock);
    return n;
}

static struct hooked_symbol *find_symbol(const char *name)
{
    /* Asked for every import of every object at start (7,000 in libruby's
     * process): a byte compared before strcmp is called. */
    for (unsigned i = 0; i < symbol_count; i++)
        if (symbols[i].first == name[0] && strcmp(symbols[i].name, name) == 0)
            return &symbols[i];
    return NULL;
}

static void *chain_target(const struct hooked_symbol *sym, const struct got_hook *h)
{
    return h ? h->replacement : sym->original;
}

/* Is `value` the entry of a hook on this symbol (i.e. a slot memprof wrote)? */
static bool is_ours(const struct hooked_symbol *sym, uintptr_t value)
{
    for (const struct got_hook *h = sym->top; h; h = h->under)
        if (value == (uintptr_t)h->replacement)
            return true;
    return false;
}

static struct patched_slot *find_slot(uintptr_t *slot)
{
    for (size_t i = 0; i < slot_count; i++)
        if (slots[i].slot == slot)
            return &slots[i];
    return NULL;
}

static int remember_slot(uintptr_t *slot, uintptr_t original, unsigned symbol)
{
    struct patched_slot *known = find_slot(slot);
    if (known) {   /* same address, new object: what it holds now is its original */
        known->original = original;
        known->symbol = symbol;
        return 0;
    }
    if (!pages_grow((void **)&slots, &slot_bytes, (slot_count + 1) * sizeof *slots, 16384))
        return ENOMEM;
    slots[slot_count++] = (struct patched_slot){ slot, original, symbol };
    return 0;
}

static size_t snapshot(void)
{
    if (!objects) {
        objects = pages_alloc(MAX_OBJECTS * sizeof *objects);
        if (!objects)
            return 0;
    }
    size_t n = elf_objects_snapshot(objects, MAX_OBJECTS);
    return n < MAX_OBJECTS ? n : MAX_OBJECTS;
}

/* The objects memprof must leave alone: its own (its replacements reach the
 * originals through it), the loader, and the vdso. */
static bool patchable(const struct elf_object *obj, const struct elf_object *self)
{
    return obj != self && (obj->kind == ELF_OBJECT_PROGRAM || obj->kind == ELF_OBJECT_LIBRARY);
}

struct patch_pass {
    struct slot_writer writer;
    int error;
};

static int patch_slot(const struct elf_object *obj, const char *name, uintptr_t *slot,
                      enum elf_slot_kind kind, void *ctx)
{
    (void)obj, (void)kind;
    struct patch_pass *pass = ctx;
    struct hooked_symbol *sym = find_symbol(name);
    if (!sym || !sym->top)
        return 0;
    uintptr_t want = (uintptr_t)sym->top->replacement;
    uintptr_t have = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (have == want)
        return 0;
    if (!is_ours(sym, have)) {
        int err = remember_slot(slot, have, (unsigned)(sym - symbols));
        if (err) {
            pass->error = err;
            return 1;
        }
    }
    int err = slot_writer_put(&pass->writer, slot, want);
    if (err)
        pass->error = err;
    return 0;
}

/* The objects a pass patched for the hooks as they are now, by load bias:
 * after a dlopen only objects loaded since need a pass, unless one was
 * unloaded (another may now sit at its bias). Any change to the hooks
 * forgets them. */
static uintptr_t *patched_bases;
static size_t patched_base_count;
static unsigned long long patched_unloads;
static bool patched_bases_valid;

static bool patched_before(uintptr_t base)
{
    for (size_t i = 0; i < patched_base_count; i++)
        if (patched_bases[i] == base)
            return true;
    return false;
}

/* Patch every object's slots for the hooks; with `new_only`, only objects
 * no pass has patched for the current hooks. */
static int patch_all_locked(bool new_only)
{
    unsigned long long unloads = elf_objects_unloaded();
    bool skip_known = new_only && patched_bases_valid && unloads == patched_unloads;
    size_t n = snapshot();
    const struct elf_object *self = elf_objects_find(objects, n, (uintptr_t)&patch_all_locked);
    bool wanted[MAX_OBJECTS], any = false;
    for (size_t i = 0; i < n; i++) {
        wanted[i] = patchable(&objects[i], self) && !(skip_known && patched_before(objects[i].base));
        any |= wanted[i];
    }
    if (!any)
        return 0;
    struct maps maps;
    int err = maps_load(&maps);
    if (err)
        return err;
    struct patch_pass pass = { 0 };
    slot_writer_begin(&pass.writer, &maps);
    for (size_t i = 0; i < n && !pass.error; i++)
        if (wanted[i])
            elf_object_each_slot(&objects[i], patch_slot, &pass);
    err = slot_writer_end(&pass.writer);
    if (!pass.error)
        pass.error = err;
    maps_release(&maps);
    if (!patched_bases)
        patched_bases = pages_alloc(MAX_OBJECTS * sizeof *patched_bases);
    patched_bases_valid = !pass.error && patched_bases && unloads != ~0ull;
    if (patched_bases_valid) {
        patched_base_count = 0;
        for (size_t i = 0; i < n; i++)
            if (patchable(&objects[i], self))
                patched_bases[patched_base_count++] = objects[i].base;
        patched_unloads = unloads;
    }
    return pass.error;
}

/* Was `value` written for a hook on `sym` just unchained (in `gone`), or
 * one still in its chain? */
static bool was_ours(const struct hooked_symbol *sym, uintptr_t value, struct got_hook *const *gone, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (value == (uintptr_t)gone[i]->replacement && strcmp(gone[i]->symbol, sym->name) == 0)
            return true;
    return is_ours(sym, value);
}

/* Point every slot memprof wrote for the hooks in `gone` (just unchained) at
 * their symbol's new chain head, or give it back its original when the chain
 * is empty. Slots whose value is no longer ours (object unloaded, address
 * reused, someone else patched) are forgotten without a write. One pass over
 * the slots and one read of the memory map, for any number of hooks. */
static void retarget_locked(struct got_hook *const *gone, size_t n)
{
    patched_bases_valid = false;
    struct maps maps;
    if (maps_load(&maps) != 0)
        return;
    size_t object_count = snapshot();
    bool affected[MAX_SYMBOLS] = { false };   /* by symbol index */
    for (size_t g = 0; g < n; g++) {
        const struct hooked_symbol *sym = find_symbol(gone[g]->symbol);
        if (sym)
            affected[sym - symbols] = true;
    }
    struct slot_writer writer;
    slot_writer_begin(&writer, &maps);
    size_t kept = 0;
    for (size_t i = 0; i < slot_count; i++) {
        struct patched_slot s = slots[i];
        struct hooked_symbol *sym = &symbols[s.symbol];
        bool keep = true;
        if (affected[s.symbol]) {
            bool loaded = elf_objects_find(objects, object_count, (uintptr_t)s.slot) != NULL &&
                          maps_readable(&maps, (uintptr_t)s.slot, sizeof *s.slot);
            uintptr_t have = loaded ? __atomic_load_n(s.slot, __ATOMIC_ACQUIRE) : 0;
            if (!loaded || !was_ours(sym, have, gone, n))
                keep = false;
            else if (sym->top)
                slot_writer_put(&writer, s.slot, (uintptr_t)sym->top->replacement);
            else {
                slot_writer_put(&writer, s.slot, s.original);
                keep = false;
            }
        }
        if (keep)
            slots[kept++] = s;
    }
    slot_count = kept;
    slot_writer_end(&writer);
    maps_release(&maps);
}

/* Where `name` really is. dlsym may answer with a non-PIE program's canonical
 * PLT entry (the program takes the function's address, so the linker defines
 * the symbol at its own PLT stub, as in Debian's python3): calling through it
 * goes to the program's GOT slot, which memprof patched, and back into the
 * hook forever. Such a symbol is undefined in the program's .dynsym, with a
 * value; the real one is the first definition in the objects after it. */
static void *real_definition(const char *name)
{
    void *found = dlsym(RTLD_DEFAULT, name);
    size_t n = found ? snapshot() : 0;
    const struct elf_object *in = elf_objects_find(objects, n, (uintptr_t)found);
    if (!in || in->kind != ELF_OBJECT_PROGRAM || elf_object_lookup(in, name))
        return found;
    for (size_t i = 0; i < n; i++) {
        uintptr_t at = objects[i].kind == ELF_OBJECT_LIBRARY ? elf_object_symbol_address(&objects[i], name) : 0;
        if (at)
            return (void *)at;
    }
    return found;
}

/* Put `hook` at the head of its symbol's chain; the slots are written by
 * the next pass. */
static int chain_locked(struct got_hook *hook)
{
    if (hook->installed)
        return 0;
    struct hooked_symbol *sym = find_symbol(hook->symbol);
    if (!sym) {
        if (symbol_count == MAX_SYMBOLS) {
            set_error("too many hooked functions", hook->symbol);
            return -1;
        }
        void *original = real_definition(hook->symbol);
        if (!original) {
            set_error("no such function in the process", hook->symbol);
            return -1;
        }
        sym = &symbols[symbol_count++];
        *sym = (struct hooked_symbol){ .first = hook->symbol[0], .name = hook->symbol, .original = original };
    }
    hook->under = sym->top;
    __atomic_store_n(hook->next, chain_target(sym, hook->under), __ATOMIC_RELEASE);
    sym->top = hook;
    hook->installed = true;
    return 0;
}

/* Take `hook` out of its chain. True when it was the head: its slots must be
 * pointed elsewhere (retarget_locked). */
static bool unchain_locked(struct got_hook *hook)
{
    if (!hook->installed)
        return false;
    struct hooked_symbol *sym = find_symbol(hook->symbol);
    hook->installed = false;
    if (!sym)
        return false;
    bool was_top = sym->top == hook;
    if (was_top) {
        sym->top = hook->under;
    } else {
        for (struct got_hook *above = sym->top; above; above = above->under)
            if (above->under == hook) {
                above->under = hook->under;
                __atomic_store_n(above->next, chain_target(sym, hook->under), __ATOMIC_RELEASE);
                break;
            }
    }
    hook->under = NULL;
    return was_top;
}

static void remove_all_locked(struct got_hook *hooks, size_t n)
{
    struct got_hook *heads[MAX_SYMBOLS + 1];
    size_t head_count = 0;
    for (size_t i = n; i-- > 0;)
        if (unchain_locked(&hooks[i]) && head_count < sizeof heads / sizeof heads[0])
            heads[head_count++] = &hooks[i];
    if (dlopen_hook.installed && !user_hooks_active() && unchain_locked(&dlopen_hook) &&
        head_count < sizeof heads / sizeof heads[0])
        heads[head_count++] = &dlopen_hook;
    if (head_count)
        retarget_locked(heads, head_count);
}

/* All of `hooks` or none: one pass over the objects' slots for all. */
static int install_all_locked(struct got_hook *hooks, size_t n)
{
    size_t chained = 0;
    int rc = 0;
    while (chained < n && (rc = chain_locked(&hooks[chained])) == 0)
        chained++;
    /* Objects that dlopen brings in later must be patched too. */
    if (rc == 0 && !dlopen_hook.installed)
        rc = chain_locked(&dlopen_hook);
    if (rc == 0) {
        int err = patch_all_locked(false);
        if (err) {
            set_error(strerror(err), hooks[0].symbol);
            rc = -1;
        }
    }
    if (rc != 0)   /* give back the slots this pass already wrote */
        remove_all_locked(hooks, chained);
    return rc;
}

int got_hooks_install(struct got_hook *hooks, size_t n)
{
    pthread_mutex_lock(&got_lock);
    int rc = install_all_locked(hooks, n);
    pthread_mutex_unlock(&got_lock);
    return rc;
}

void got_hooks_remove(struct got_hook *hooks, size_t n)
{
    pthread_mutex_lock(&got_lock);
    remove_all_locked(hooks, n);
    pthread_mutex_unlock(&got_lock);
}

int got_hook_install(struct got_hook *hook)
{
    return got_hooks_install(hook, 1);
}

void got_hook_remove(struct got_hook *hook)
{
    got_hooks_remove(hook, 1);
}

/* Slots still holding an entry in `old` (an unloaded object's are left
 * alone) get the same index's in `entries`: one read of the memory map. */
static int rewrite_slots_locked(const struct hooked_symbol *const *syms, void *const *old, void *const *entries,
                                size_t n)
{
    struct maps maps;
    int err = maps_load(&maps);
    if (err)
        return err;
    struct slot_writer writer;
    slot_writer_begin(&writer, &maps);
    for (size_t i = 0; i < slot_count && !err; i++) {
        uintptr_t *slot = slots[i].slot;
        for (size_t k = 0; k < n && !err; k++)
            if (syms[k] && &symbols[slots[i].symbol] == syms[k] &&
                maps_readable(&maps, (uintptr_t)slot, sizeof *slot) &&
                __atomic_load_n(slot, __ATOMIC_ACQUIRE) == (uintptr_t)old[k])
                err = slot_writer_put(&writer, slot, (uintptr_t)entries[k]);
    }
    int end = slot_writer_end(&writer);
    maps_release(&maps);
    if (!err)
        err = end;
    return err;
}

int got_hooks_retarget(struct got_hook *const *hooks, void *const *entries, size_t n)
{
    const struct hooked_symbol *syms[MAX_SYMBOLS];
    void *old[MAX_SYMBOLS];
    bool rewrite = false;
    if (n > MAX_SYMBOLS) {
        set_error("too many hooks at once", hooks[0]->symbol);
        return -1;
    }
    pthread_mutex_lock(&got_lock);
    for (size_t k = 0; k < n; k++) {
        struct got_hook *hook = hooks[k];
        struct hooked_symbol *sym = hook->installed ? find_symbol(hook->symbol) : NULL;
        old[k] = hook->replacement;
        hook->replacement = entries[k];
        syms[k] = NULL;
        if (!sym || old[k] == entries[k])
            continue;
        for (struct got_hook *above = sym->top; above; above = above->under)
            if (above->under == hook)
                __atomic_store_n(above->next, entries[k], __ATOMIC_RELEASE);
        if (sym->top == hook) {   /* the slots point at it */
            syms[k] = sym;
            rewrite = true;
        }
    }
    int err = rewrite ? rewrite_slots_locked(syms, old, entries, n) : 0;
    if (err)
        set_error(strerror(err), hooks[0]->symbol);
    pthread_mutex_unlock(&got_lock);
    return err ? -1 : 0;
}

int got_hook_retarget(struct got_hook *hook, void *replacement)
{
    return got_hooks_retarget(&hook, &replacement, 1);
}

void got_hook_refresh(void)
{
    pthread_mutex_lock(&got_lock);
    patch_all_locked(true);
    pthread_mutex_unlock(&got_lock);
}

static bool user_hooks_active(void)
{
    for (unsigned i = 0; i < symbol_count; i++)
        for (struct got_hook *h = symbols[i].top; h; h = h->under)
            if (h != &dlopen_hook)
                return true;
    return false;
}

/* Our lock is taken only after the real dlopen returned, never inside the
 * loader's lock: one order only. Limitation: dlopen sees this function as its
 * caller, so a bare name is searched with this library's RUNPATH, not the
 * caller's (see doc/manual.md, "Limits"). */
uint64_t got_objects_loaded;

static void *watch_dlopen(const char *file, int mode)
{
    void *handle = real_dlopen(file, mode);
    if (handle) {
        __atomic_add_fetch(&got_objects_loaded, 1, __ATOMIC_RELEASE);
        got_hook_refresh();
    }
    return handle;
}
