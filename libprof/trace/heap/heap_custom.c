/* Custom allocators (see heap_custom.h). Each named function gets an
 * interceptor stub (hook/intercept.c), reached through the GOT slots of every
 * object that calls it; its pre-handler (and for an allocator, its
 * post-handler, which sees the returned address) records the block in the
 * heap tracer's tables with the caller of the function as its site. */
#include "heap_custom.h"
#include "heap_sample_sites.h"
#include "heap.h"
#include "../../objfile/disk_symbols.h"
#include "../../hook/callsite.h"
#include "../../hook/got.h"
#include "../../hook/store_site.h"
#include "../../hook/entry_site.h"
#include "../../hook/entry_value.h"
#include "../../hook/intercept.h"
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CUSTOM 32
#define MAX_ARG 5
#define ARG_RET (-1)     /* the returned value */
#define ARG_NONE (-2)
#define MAX_TARGETS (1 + DISK_CLONES_MAX)

/* --calls: a function whose calls are rewritten, NAME or a clone of it. */
struct call_target {
    char name[128];
    struct callsite_patch patch;
};

struct custom_hook {
    char name[128];
    int size_arg, ptr_arg;
    bool calls;                      /* --calls: the calls rewritten, not the GOT */
    bool stores;                     /* --stores VARIABLE --in FUNCTION free=value */
    bool inlined;                    /* --inline FUNCTION free=PARAM | ptr=PARAM [size=PARAM]: every copy's entry */
    bool inline_alloc;               /* --inline ... ptr=PARAM: each entry makes a block */
    bool partial;                    /* --inline ... --partial: copies that cannot be read left out */
    char in[128];                    /* --stores: the function; --inline: the parameter */
    char second[128];                /* --inline ... size=PARAM, else "" */
    char own_names[200];             /* --inline: the symbols of its copies out of line */
    size_t copies;                   /* --stores: ranges of FUNCTION's code */
    size_t expected;                 /* sites=N, else 0 */
    bool removed;                    /* by heap_custom_unhook_all: its id is not reused */
    struct got_hook got;
    struct call_target targets[MAX_TARGETS];
    size_t target_count;
    char clones_left[200];           /* --calls with size=: clones whose arguments may differ */
    struct store_patch store;
    struct entry_patch entry;
};

static pthread_mutex_t custom_lock = PTHREAD_MUTEX_INITIALIZER;
static struct custom_hook hooks[MAX_CUSTOM];
static unsigned hook_count;

static uint64_t argument(const struct intercept_regs *r, int n)
{
    const uint64_t args[MAX_ARG + 1] = { r->rdi, r->rsi, r->rdx, r->rcx, r->r8, r->r9 };
    return n >= 0 && n <= MAX_ARG ? args[n] : 0;
}

static void custom_pre(uint32_t id, struct intercept_regs *regs)
{
    const struct custom_hook *h = &hooks[id];
    if (h->ptr_arg == ARG_RET) {   /* the block is known at the return */
        uint64_t *data = intercept_call_data();
        if (data) {
            data[0] = h->size_arg == ARG_NONE ? 0 : argument(regs, h->size_arg);
            data[1] = intercept_caller(regs);
        }
    } else if (h->size_arg == ARG_NONE) {
        heap_note_custom_free((void *)(uintptr_t)argument(regs, h->ptr_arg));
    } else {
        heap_note_custom_alloc((void *)(uintptr_t)argument(regs, h->ptr_arg), argument(regs, h->size_arg),
                               (void *)intercept_caller(regs));
    }
}

/* --inline: the parameter at an entry is a block freed, or one made (of
 * `second` bytes, 0 when no size was named). */
static void custom_entry(uint32_t id, uint64_t value, uint64_t second, uintptr_t caller)
{
    if (hooks[id].inline_alloc)
        heap_note_custom_alloc((void *)(uintptr_t)value, second, (void *)caller);
    else
        heap_note_custom_free((void *)(uintptr_t)value);
}

/* --stores: the value stored is a block freed. */
static void custom_store(uint32_t id, uint64_t value)
{
    (void)id;
    heap_note_custom_free((void *)(uintptr_t)value);
}

static void custom_post(uint32_t id, const struct intercept_return *ret, const uint64_t data[2])
{
    (void)id;
    heap_note_custom_alloc((void *)(uintptr_t)ret->rax, data[0], (void *)(uintptr_t)data[1]);
}

/* "argN" (N 0-5), or "ret" where `ret_ok`. */
static bool parse_arg(const char *value, bool ret_ok, int *out)
{
    if (ret_ok && strcmp(value, "ret") == 0) {
        *out = ARG_RET;
        return true;
    }
    if (strncmp(value, "arg", 3) != 0 || value[3] < '0' || value[3] > '0' + MAX_ARG || value[4])
        return false;
    *out = value[3] - '0';
    return true;
}

static bool parse(const char *spec, struct custom_hook *h)
{
    char words[6][128];
    int n = sscanf(spec, "%127s %127s %127s %127s %127s %127s", words[0], words[1], words[2], words[3], words[4],
                   words[5]);
    /* sites=N (--calls, --stores): the number of sites the user counts on. */
    for (int i = 1; i < n; i++)
        if (strncmp(words[i], "sites=", 6) == 0) {
            char *end;
            unsigned long sites = strtoul(words[i] + 6, &end, 10);
            if (*end || sites == 0 || sites > 1000000 || h->expected)
                return false;
            h->expected = sites;
            memmove(words[i], words[i + 1], (size_t)(n - i - 1) * sizeof words[0]);
            n--, i--;
        } else if (strcmp(words[i], "--partial") == 0 && strcmp(words[0], "--inline") == 0 && !h->partial) {
            h->partial = true;
            memmove(words[i], words[i + 1], (size_t)(n - i - 1) * sizeof words[0]);
            n--, i--;
        }
    int first = 0;
    if (h->expected && strcmp(words[0], "--calls") != 0 && strcmp(words[0], "--stores") != 0 &&
        strcmp(words[0], "--inline") != 0)
        return false;
    if ((n == 3 || n == 4) && strcmp(words[0], "--inline") == 0) {
        h->inlined = true;
        snprintf(h->name, sizeof h->name, "%.127s", words[1]);
        if (n == 3 && strncmp(words[2], "free=", 5) == 0 && words[2][5]) {
            snprintf(h->in, sizeof h->in, "%.122s", words[2] + 5);
            return true;
        }
        /* ptr=P [size=S], in either order */
        for (int i = 2; i < n; i++) {
            if (strncmp(words[i], "ptr=", 4) == 0 && words[i][4] && !h->inline_alloc) {
                h->inline_alloc = true;
                snprintf(h->in, sizeof h->in, "%.123s", words[i] + 4);
            } else if (strncmp(words[i], "size=", 5) == 0 && words[i][5] && !*h->second) {
                snprintf(h->second, sizeof h->second, "%.122s", words[i] + 5);
            } else {
                return false;
            }
        }
        return h->inline_alloc;
    }
    if (n == 5 && strcmp(words[0], "--stores") == 0) {
        h->stores = true;
        snprintf(h->name, sizeof h->name, "%s", words[1]);
        snprintf(h->in, sizeof h->in, "%s", words[3]);
        return strcmp(words[2], "--in") == 0 && strcmp(words[4], "free=value") == 0;
    }
    if (n >= 1 && strcmp(words[0], "--calls") == 0) {
        h->calls = true;
        first = 1;
    }
    if (n - first < 2 || n - first > 3)
        return false;
    snprintf(h->name, sizeof h->name, "%.127s", words[first]);
    h->size_arg = h->ptr_arg = ARG_NONE;
    for (int i = first + 1; i < n; i++) {
        if (strncmp(words[i], "size=", 5) == 0 && h->size_arg == ARG_NONE) {
            if (!parse_arg(words[i] + 5, false, &h->size_arg))
                return false;
        } else if (strncmp(words[i], "ptr=", 4) == 0 && h->ptr_arg == ARG_NONE) {
            if (!parse_arg(words[i] + 4, true, &h->ptr_arg))
                return false;
        } else {
            return false;
        }
    }
    /* An allocator says where its size is (one whose calls are rewritten
     * may make blocks of no stated size: objects); a free has no size. */
    if (h->calls)
        return h->ptr_arg == ARG_RET;
    return h->ptr_arg != ARG_NONE && (h->ptr_arg != ARG_RET || h->size_arg != ARG_NONE);
}

static void describe(const struct custom_hook *h, size_t slots, char *message, size_t size)
{
    if (h->inlined) {
        size_t own = 0, repeats = 0, keepers = 0, threaded = 0;
        for (size_t i = 0; i < h->entry.count; i++) {
            const struct entry_site *site = &h->entry.sites[i];
            if (site->kind == SITE_KEEPS_ENTRY_VALUE) {
                keepers++;
                continue;
            }
            own += !site->where.inlined;
            repeats += site->where.further_start_of && site->where.same_row;
            threaded += site->where.further_start_of && !site->where.same_row;
        }
        slots -= repeats + keepers + threaded;
        char what[300];
        if (!h->inline_alloc)
            snprintf(what, sizeof what, "frees the block at its parameter %s", h->in);
        else if (*h->second)
            snprintf(what, sizeof what, "makes a block of %s bytes at its parameter %s", h->second, h->in);
        else
            snprintf(what, sizeof what, "makes an object at its parameter %s", h->in);
        int n = snprintf(message, size,
                         "memprof: %s hooked at the entry of %zu cop%s (%zu inlined, %zu out of line%s%s): each %s",
                         h->name, slots, slots == 1 ? "y" : "ies", slots - own, own, *h->own_names ? ": " : "",
                         h->own_names, what);
        if (repeats && n > 0 && (size_t)n < size)
            n += snprintf(message + n, size - (size_t)n,
                          ", and at %zu more start%s of unrolled copies, each a call", repeats, repeats == 1 ? "" : "s");
        if (threaded && n > 0 && (size_t)n < size)
            n += snprintf(message + n, size - (size_t)n,
                          ", and at %zu place%s a jump is threaded into past a copy's entry (a block freed at both "
                          "is freed once)", threaded, threaded == 1 ? "" : "s");
        if (keepers && n > 0 && (size_t)n < size)
            n += snprintf(message + n, size - (size_t)n,
                          ", and at %zu function entr%s that keep%s the register the parameter is passed on from",
                          keepers, keepers == 1 ? "y" : "ies", keepers == 1 ? "s" : "");
        if (h->entry.left_out && n > 0 && (size_t)n < size)
            snprintf(message + n, size - (size_t)n, "; %zu cop%s left out (--partial: what %s there is not seen): %s",
                     h->entry.left_out, h->entry.left_out == 1 ? "y" : "ies", h->inline_alloc ? "it makes" : "it frees",
                     h->entry.left_out_why);
        return;
    }
    if (h->stores) {
        snprintf(message, size, "memprof: %zu store%s to %s in %s (%zu range%s of code) hooked: each stores a freed block",
                 slots, slots == 1 ? "" : "s", h->name, h->in, h->copies, h->copies == 1 ? "" : "s");
        return;
    }
    char what[96];
    if (h->ptr_arg == ARG_RET && h->size_arg == ARG_NONE)
        snprintf(what, sizeof what, "an object at the address it returns");
    else if (h->ptr_arg == ARG_RET)
        snprintf(what, sizeof what, "a block of arg%d bytes at the address it returns", h->size_arg);
    else if (h->size_arg == ARG_NONE)
        snprintf(what, sizeof what, "a free of the block at arg%d", h->ptr_arg);
    else
        snprintf(what, sizeof what, "a block of arg%d bytes at arg%d", h->size_arg, h->ptr_arg);
    if (h->calls) {
        /* The clones by name, with their calls: "(3 of newobj, 1 of newobj.constprop.0)". */
        char targets[600] = "";
        size_t used = 0;
        bool clones = h->target_count > 1 || (h->target_count == 1 && strcmp(h->targets[0].name, h->name) != 0);
        for (size_t i = 0; clones && i < h->target_count && used < sizeof targets; i++)
            used += (size_t)snprintf(targets + used, sizeof targets - used, "%s%zu of %s%s", i ? ", " : " (",
                                     h->targets[i].patch.count, h->targets[i].name,
                                     i + 1 == h->target_count ? ")" : "");
        snprintf(message, size, "memprof: %zu call%s of %s rewritten%s: each call is %s%s%s%s", slots,
                 slots == 1 ? "" : "s", h->name, targets, what, *h->clones_left ? " (not " : "", h->clones_left,
                 *h->clones_left ? ": a clone may take other arguments; hook it by its own name)" : "");
    } else
        snprintf(message, size, "memprof: %s hooked in %zu GOT slot%s: each call is %s%s", h->name, slots,
                 slots == 1 ? "" : "s", what,
                 slots ? "" : " (but no object calls it through its GOT: calls inside its own object are not seen)");
}

/* A function given by address ("0x..."): the name of the exported symbol
 * that starts there (the GOT slots that call it are found by name). */
static bool name_address(struct custom_hook *h, char *message, size_t message_size)
{
    if (strncmp(h->name, "0x", 2) != 0)
        return true;
    char *end;
    unsigned long long address = strtoull(h->name, &end, 16);
    Dl_info info;
    if (*end || !dladdr((void *)(uintptr_t)address, &info) || !info.dli_sname ||
        (uintptr_t)info.dli_saddr != address) {
        snprintf(message, message_size, "memprof: no exported function starts at %s", h->name);
        return false;
    }
    snprintf(h->name, sizeof h->name, "%s", info.dli_sname);
    return true;
}

/* The sites found, against what the user counts on (sites=N): false, with
 * a message, when there are none or another number. */
static bool sites_as_expected(const struct custom_hook *h, size_t found, char *message, size_t size)
{
    if (found == 0 && h->calls)
        snprintf(message, size, "memprof: no call rel32 of %s found in its object%s%s%s", h->name,
                 *h->clones_left ? " (its clones " : "", h->clones_left,
                 *h->clones_left ? " left out: they may take other arguments; hook them by their own names)" : "");
    else if (found == 0)
        snprintf(message, size, "memprof: no store of a register to %s in %s (%zu ranges of code)", h->name, h->in,
                 h->copies);
    else if (h->expected && found != h->expected && h->calls)
        snprintf(message, size, "memprof: %zu calls of %s found, %zu expected: nothing rewritten", found, h->name,
                 h->expected);
    else if (h->expected && found != h->expected)
        snprintf(message, size, "memprof: %zu stores to %s found in %s, %zu expected: nothing patched", found,
                 h->name, h->in, h->expected);
    else
        return true;
    return false;
}

/* A failed patch: nothing was changed. */
static enum memprof_status patch_failed(const struct custom_hook *h, int err, char *message, size_t size)
{
    snprintf(message, size, "memprof: cannot %s %s: %s", h->calls ? "rewrite the calls of" : "patch the stores to",
             h->name, err == EXDEV ? h->calls ? "a call's displacement crosses a cache line, and other threads run"
                                              : "a store lies across a cache line, and other threads run"
                                   : strerror(err));
    return err == ENOMEM ? MEMPROF_NO_MEMORY : MEMPROF_HOOK_FAILED;
}

static size_t calls_count(const struct custom_hook *h)
{
    size_t n = 0;
    for (size_t i = 0; i < h->target_count; i++)
        n += h->targets[i].patch.count;
    return n;
}

static void calls_free(struct custom_hook *h)
{
    for (size_t i = 0; i < h->target_count; i++)
        callsite_free(&h->targets[i].patch);
}

/* Every target's calls back, each as it was; 0 or the first errno. */
static int calls_restore(struct custom_hook *h)
{
    int first = 0;
    for (size_t i = 0; i < h->target_count; i++) {
        int err = callsite_restore(&h->targets[i].patch);
        if (err && !first)
            first = err;
    }
    return first;
}

/* The functions whose calls are rewritten: NAME and its clones, but not a
 * clone whose arguments may differ when an argument is read. */
static bool choose_targets(struct custom_hook *h, const struct disk_function_set *set, char *message, size_t size)
{
    if (set->clone_count > DISK_CLONES_MAX) {
        snprintf(message, size, "memprof: %s has %zu clones, more than %d: hook them by their own names", h->name,
                 set->clone_count, DISK_CLONES_MAX);
        return false;
    }
    h->target_count = 0;
    if (set->address) {
        size_t n = strnlen(h->name, sizeof h->targets[0].name - 1);   /* both in hooks[]: no snprintf */
        memcpy(h->targets[0].name, h->name, n);
        h->targets[0].name[n] = '\0';
        h->targets[0].patch.target = set->address;
        h->target_count = 1;
    }
    for (size_t i = 0; i < set->clone_count; i++) {
        const struct disk_clone *k = &set->clones[i];
        if (h->size_arg != ARG_NONE && !k->renamed) {
            size_t used = strlen(h->clones_left);
            snprintf(h->clones_left + used, sizeof h->clones_left - used, "%s%s", used ? ", " : "", k->name);
            continue;
        }
        struct call_target *t = &h->targets[h->target_count++];
        snprintf(t->name, sizeof t->name, "%s", k->name);
        t->patch.target = k->address;
    }
    return true;
}

/* --calls: every call rel32 to the function and to its clones (found by
 * its object's symbols on disk) pointed at a stub that keeps every
 * register, one stub per function. All or none. */
static enum memprof_status rewrite_calls(uint32_t id, struct custom_hook *h, char *message, size_t message_size)
{
    struct disk_function_set set;
    int err = disk_symbols_find(h->name, &set, message, message_size);
    if (err)
        return err == ENOMEM ? MEMPROF_NO_MEMORY : MEMPROF_BAD_ARGUMENT;
    if (!choose_targets(h, &set, message, message_size)) {
        disk_symbols_free(&set);
        return MEMPROF_BAD_ARGUMENT;
    }
    size_t found = 0;
    for (size_t i = 0; i < h->target_count && !err; i++) {
        struct call_target *t = &h->targets[i];
        err = callsite_find(set.functions, set.count, t->patch.target, &t->patch);
        found += t->patch.count;
    }
    disk_symbols_free(&set);
    if (!err && !sites_as_expected(h, found, message, message_size)) {
        calls_free(h);
        return MEMPROF_BAD_ARGUMENT;
    }
    for (size_t i = 0; i < h->target_count && !err; i++) {
        struct call_target *t = &h->targets[i];
        struct intercept_stub stub;
        if (t->patch.count == 0)
            continue;
        err = intercept_keeping_stub(id, t->name, custom_pre, custom_post, t->patch.target, t->patch.target, &stub);
        if (!err)
            err = callsite_apply(&t->patch, stub.entry, 0);
    }
    if (err) {
        calls_restore(h);
        calls_free(h);
        return patch_failed(h, err, message, message_size);
    }
    return MEMPROF_OK;
}

/* --stores: the stores to the variable inside the function's code: its own
 * copy and every inlined instance (DWARF). */
static enum memprof_status patch_stores(uint32_t id, struct custom_hook *h, char *message, size_t message_size)
{
    uintptr_t variable;
    if (disk_symbols_variable(h->name, &variable, message, message_size) != 0)
        return MEMPROF_BAD_ARGUMENT;
    struct disk_function_set set;
    int err = disk_symbols_spans(h->in, &set, message, message_size);
    if (err)
        return err == ENOMEM ? MEMPROF_NO_MEMORY : MEMPROF_BAD_ARGUMENT;
    h->copies = set.count;
    err = store_sites_find(set.functions, set.count, variable, &h->store);
    disk_symbols_free(&set);
    if (!err && !sites_as_expected(h, h->store.count, message, message_size)) {
        store_sites_free(&h->store);
        return MEMPROF_BAD_ARGUMENT;
    }
    if (!err)
        err = store_sites_apply(&h->store, id, h->name, custom_store, h->expected);
    if (err) {
        store_sites_free(&h->store);
        return patch_failed(h, err, message, message_size);
    }
    return MEMPROF_OK;
}

/* --inline: every copy of the function, its entry patched to a stub that
 * reads the parameter where DWARF says it is there. All or none. */
static enum memprof_status patch_entries(uint32_t id, struct custom_hook *h, char *message, size_t message_size)
{
    struct disk_inline_set set;
    int err = disk_symbols_inline_entries(h->name, h->in, *h->second ? h->second : NULL, &set, message,
                                          message_size);
    if (err)
        return err == ENOMEM ? MEMPROF_NO_MEMORY : MEMPROF_BAD_ARGUMENT;
    char why[400];
    const char *names[2] = { h->in, h->second };
    err = entry_sites_prepare(set.entries, set.seconds, set.count, names, h->partial, !h->inline_alloc, &h->entry,
                              why, sizeof why);
    size_t found = 0;   /* the copies, not the further starts of one */
    for (size_t i = 0; i < set.count; i++)
        found += !set.entries[i].further_start_of;
    for (size_t i = 0, used = 0; i < set.own_count && used < sizeof h->own_names; i++)
        used += (size_t)snprintf(h->own_names + used, sizeof h->own_names - used, "%s%s", i ? ", " : "",
                                 set.own[i].name);
    disk_inline_free(&set);
    if (err) {
        snprintf(message, message_size, "memprof: cannot hook %s, nothing patched: %s", h->name, why);
        return err == ENOMEM ? MEMPROF_NO_MEMORY : MEMPROF_HOOK_FAILED;
    }
    if (h->expected && found != h->expected) {
        snprintf(message, message_size, "memprof: %zu copies of %s found, %zu expected: nothing patched", found,
                 h->name, h->expected);
        entry_sites_free(&h->entry);
        return MEMPROF_BAD_ARGUMENT;
    }
    if ((err = entry_sites_apply(&h->entry, id, h->name, custom_entry)) != 0) {
        entry_sites_free(&h->entry);
        snprintf(message, message_size, "memprof: cannot hook %s, nothing patched: %s", h->name,
                 err == ERANGE   ? "a moved instruction's target is out of a rel32's reach from its stub"
                 : err == EXDEV ? "no 8 bytes within a cache line hold a jmp at an entry, and other threads run"
                                : strerror(err));
        return err == ENOMEM ? MEMPROF_NO_MEMORY : MEMPROF_HOOK_FAILED;
    }
    return MEMPROF_OK;
}

enum memprof_status heap_custom_hook(const char *spec, char *message, size_t message_size)
{
    struct custom_hook h = { 0 };
    if (!spec || !parse(spec, &h)) {
        snprintf(message, message_size, "memprof: usage: memprof-hook FUNCTION size=argN ptr=ret, "
                                        "FUNCTION ptr=argN [size=argM], --calls FUNCTION ptr=ret [size=argN] [sites=N], "
                                        "--stores VARIABLE --in FUNCTION free=value [sites=N], "
                                        "--inline FUNCTION free=PARAMETER | ptr=PARAMETER [size=PARAMETER] [sites=N] "
                                        "[--partial] "
                                        "(argN: 0-5)");
        return MEMPROF_BAD_ARGUMENT;
    }
    if (!name_address(&h, message, message_size))
        return MEMPROF_BAD_ARGUMENT;
    pthread_mutex_lock(&custom_lock);
    enum memprof_status status = MEMPROF_OK;
    for (unsigned i = 0; i < hook_count && status == MEMPROF_OK; i++)
        if (!hooks[i].removed && strcmp(hooks[i].name, h.name) == 0 && hooks[i].stores == h.stores &&
            hooks[i].inlined == h.inlined) {
            snprintf(message, message_size, "memprof: %s is already hooked", h.name);
            status = MEMPROF_BAD_ARGUMENT;
        }
    if (status == MEMPROF_OK && hook_count == MAX_CUSTOM) {
        snprintf(message, message_size, "memprof: at most %d hooks in a process's life", MAX_CUSTOM);
        status = MEMPROF_BAD_ARGUMENT;
    }
    if (status == MEMPROF_OK && heap_tracer_start() != MEMPROF_OK) {
        snprintf(message, message_size, "memprof: could not start the heap tracer");
        status = MEMPROF_HOOK_FAILED;
    }
    uint32_t id = hook_count;
    if (status == MEMPROF_OK && (h.calls || h.stores || h.inlined)) {
        /* The handlers read the hook as soon as the first site is patched. */
        hooks[id] = h;
        struct custom_hook *slot = &hooks[id];
        status = h.calls    ? rewrite_calls(id, slot, message, message_size)
                 : h.stores ? patch_stores(id, slot, message, message_size)
                            : patch_entries(id, slot, message, message_size);
        if (status == MEMPROF_OK) {
            hook_count++;
            describe(slot, h.calls ? calls_count(slot) : h.stores ? slot->store.count : slot->entry.count, message,
                     message_size);
        }
        pthread_mutex_unlock(&custom_lock);
        return status;
    }
    struct intercept_stub stub;
    if (status == MEMPROF_OK) {
        int err = h.ptr_arg == ARG_RET ? intercept_full_stub(id, h.name, custom_pre, custom_post, 0, &stub)
                                       : intercept_entry_stub(id, h.name, custom_pre, 0, &stub);
        if (err) {
            snprintf(message, message_size, "memprof: cannot make a stub for %s: %s", h.name, strerror(err));
            status = err == ENOMEM ? MEMPROF_NO_MEMORY : MEMPROF_HOOK_FAILED;
        }
    }
    if (status == MEMPROF_OK) {
        struct custom_hook *slot = &hooks[id];
        *slot = h;
        slot->got = (struct got_hook){ .symbol = slot->name, .replacement = (void *)stub.entry,
                                       .next = stub.original };
        size_t before = got_patched_slot_count();
        /* A hook on malloc or free: sampled call sites pointed past the GOT
         * would not reach it. They go back, and stay (the slots no longer
         * hold sampling's hooks). */
        if (strcmp(h.name, "malloc") == 0 || strcmp(h.name, "free") == 0)
            heap_sample_sites_restore();
        if (got_hook_install(&slot->got) != 0) {
            /* The stub stays (a pool never gives code back); the id is reused. */
            snprintf(message, message_size, "memprof: cannot hook %s", got_error());
            status = MEMPROF_BAD_ARGUMENT;
        } else {
            hook_count++;
            describe(slot, got_patched_slot_count() - before, message, message_size);
        }
    }
    pthread_mutex_unlock(&custom_lock);
    return status;
}

enum memprof_status heap_custom_unhook_all(char *message, size_t message_size)
{
    pthread_mutex_lock(&custom_lock);
    size_t removed = 0, failed = 0;
    for (unsigned i = 0; i < hook_count; i++) {
        struct custom_hook *h = &hooks[i];
        if (h->removed)
            continue;
        int err = 0;
        if (h->calls) {
            if (!(err = calls_restore(h)))
                calls_free(h);
        } else if (h->stores) {
            if (!(err = store_sites_restore(&h->store)))
                store_sites_free(&h->store);
        } else if (h->inlined) {
            if (!(err = entry_sites_restore(&h->entry)))
                entry_sites_free(&h->entry);
        } else {
            got_hook_remove(&h->got);
        }
        if (err) {
            failed++;
        } else {
            h->removed = true;   /* a thread still in its stub reads it whole */
            removed++;
        }
    }
    pthread_mutex_unlock(&custom_lock);
    if (failed)
        snprintf(message, message_size, "memprof: %zu hooks removed, %zu could not be (their code changed since)",
                 removed, failed);
    else
        snprintf(message, message_size, "memprof: %zu hook%s removed: the code patched is as it was", removed,
                 removed == 1 ? "" : "s");
    return failed ? MEMPROF_HOOK_FAILED : MEMPROF_OK;
}

void heap_custom_warnings(struct out *o)
{
    if (pthread_mutex_trylock(&custom_lock) != 0)
        return;
    for (unsigned i = 0; i < hook_count; i++) {
        const struct custom_hook *h = &hooks[i];
        if (h->removed || !h->inlined || !h->entry.left_out)
            continue;
        out_str(o, "# warning: ");
        out_str(o, h->name);
        out_str(o, ": ");
        out_u64(o, h->entry.left_out);
        out_str(o, h->entry.left_out == 1 ? " copy" : " copies");
        out_str(o, h->inline_alloc ? " left out (--partial): the blocks made there are not in this report: "
                                   : " left out (--partial): the blocks freed there still count as live: ");
        out_str(o, h->entry.left_out_why);
        out_char(o, '\n');
    }
    uint64_t missed = entry_value_missed();
    if (missed) {
        out_str(o, "# warning: ");
        out_u64(o, missed);
        out_str(o, " hooked calls found no value kept at their function's entry (a frame left by longjmp, or "
                   "more than 64 nested): not counted\n");
    }
    pthread_mutex_unlock(&custom_lock);
}

int heap_custom_describe(struct out *o)
{
    if (pthread_mutex_trylock(&custom_lock) != 0)
        return -1;
    int n = 0;
    for (unsigned i = 0; i < hook_count; i++) {
        const struct custom_hook *h = &hooks[i];
        if (h->removed)
            continue;
        n++;
        out_str(o, "  hook ");
        out_str(o, h->name);
        if (h->calls) {
            out_str(o, " (");
            out_u64(o, calls_count(h));
            out_str(o, " calls rewritten)\n");
        } else if (h->inlined) {
            out_str(o, " (");
            out_u64(o, h->entry.count);
            out_str(o, " entries patched, its parameter ");
            out_str(o, h->in);
            out_str(o, " freed");
            if (h->entry.left_out) {
                out_str(o, "; ");
                out_u64(o, h->entry.left_out);
                out_str(o, " left out");
            }
            out_str(o, ")\n");
        } else if (h->stores) {
            out_str(o, " in ");
            out_str(o, h->in);
            out_str(o, " (");
            out_u64(o, h->store.count);
            out_str(o, " stores patched)\n");
        } else {
            out_str(o, " (GOT slots)\n");
        }
    }
    pthread_mutex_unlock(&custom_lock);
    return n;
}
