/* GDB's JIT interface, inferior side (see jit.h): the descriptor and the
 * function GDB puts its breakpoint on, and one code entry per region.
 *
 * Both symbols are exported with protected visibility: GDB finds them in
 * .dynsym, and memprof's own references bind to its own copies even in a
 * process with another JIT that defines the same names. */
#include "jit.h"
#include "pool.h"
#include "../util/pages.h"
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

enum jit_action { JIT_NOACTION = 0, JIT_REGISTER_FN, JIT_UNREGISTER_FN };

struct jit_code_entry {
    struct jit_code_entry *next_entry, *prev_entry;
    const char *symfile_addr;
    uint64_t symfile_size;
};

struct jit_descriptor {
    uint32_t version;
    uint32_t action_flag;
    struct jit_code_entry *relevant_entry;
    struct jit_code_entry *first_entry;
};

#define JIT_EXPORT __attribute__((visibility("protected"), used))

JIT_EXPORT struct jit_descriptor __jit_debug_descriptor = { 1, JIT_NOACTION, NULL, NULL };

/* GDB's breakpoint: it must be called, not inlined or folded away. */
JIT_EXPORT __attribute__((noinline, noipa)) void __jit_debug_register_code(void)
{
    __asm__ volatile("" ::: "memory");
}

/* What memprof knows of a region, and its registered entry. */
struct region {
    uintptr_t code_start;
    uint64_t cookie;
    struct jit_symfile_stub *stubs;
    size_t stub_count, stubs_bytes;
    struct jit_symfile_range *ranges;
    size_t range_count, ranges_bytes;
    char *strings;
    size_t strings_size, strings_bytes;
    struct jit_code_entry *entry;      /* registered, in a mapping of entry_bytes */
    size_t entry_bytes;
    bool changed;
};

static pthread_mutex_t jit_lock = PTHREAD_MUTEX_INITIALIZER;
static struct region *regions;
static size_t region_count, regions_bytes;
static unsigned holds;
static struct jit_symfile_header shadow_layout;

static struct region *region_at(uintptr_t code_start)
{
    for (size_t i = 0; i < region_count; i++)
        if (regions[i].code_start == code_start)
            return &regions[i];
    if (!pages_grow((void **)&regions, &regions_bytes, (region_count + 1) * sizeof *regions, 4096))
        return NULL;
    struct region *r = &regions[region_count++];
    memset(r, 0, sizeof *r);
    r->code_start = code_start;
    return r;
}

static void notify_gdb(struct jit_code_entry *entry, enum jit_action action)
{
    __jit_debug_descriptor.relevant_entry = entry;
    __jit_debug_descriptor.action_flag = action;
    __jit_debug_register_code();
    __jit_debug_descriptor.action_flag = JIT_NOACTION;
}

/* Replace the region's entry by one with its current symfile. GDB copies a
 * symfile when told of it, so the old mapping goes once GDB is told. */
static int publish(struct region *r)
{
    struct jit_symfile_header h = shadow_layout;
    memcpy(h.magic, JIT_SYMFILE_MAGIC, sizeof h.magic);
    h.version = JIT_SYMFILE_VERSION;
    h.header_size = sizeof h;
    h.stub_count = (uint32_t)r->stub_count;
    h.stub_size = sizeof *r->stubs;
    h.range_count = (uint32_t)r->range_count;
    h.range_size = sizeof *r->ranges;
    h.strings_size = (uint32_t)r->strings_size;
    h.code_start = r->code_start;
    h.region_cookie = r->cookie;
    h.code_size = POOL_REGION_BYTES;
    size_t stubs = r->stub_count * sizeof *r->stubs, ranges = r->range_count * sizeof *r->ranges;
    size_t total = sizeof h + stubs + ranges + r->strings_size;
    h.total_size = (uint32_t)total;
    size_t bytes = sizeof(struct jit_code_entry) + total;
    struct jit_code_entry *entry = pages_alloc(bytes);
    if (!entry)
        return ENOMEM;
    char *symfile = (char *)(entry + 1), *at = symfile;
    memcpy(at, &h, sizeof h), at += sizeof h;
    memcpy(at, r->stubs, stubs), at += stubs;
    memcpy(at, r->ranges, ranges), at += ranges;
    memcpy(at, r->strings, r->strings_size);
    entry->symfile_addr = symfile;
    entry->symfile_size = total;

    struct jit_code_entry *old = r->entry;
    if (old) {
        if (old->prev_entry)
            old->prev_entry->next_entry = old->next_entry;
        else
            __jit_debug_descriptor.first_entry = old->next_entry;
        if (old->next_entry)
            old->next_entry->prev_entry = old->prev_entry;
        notify_gdb(old, JIT_UNREGISTER_FN);
        pages_free(old, r->entry_bytes);
    }
    entry->prev_entry = NULL;
    entry->next_entry = __jit_debug_descriptor.first_entry;
    if (entry->next_entry)
        entry->next_entry->prev_entry = entry;
    __jit_debug_descriptor.first_entry = entry;
    r->entry = entry;
    r->entry_bytes = bytes;
    r->changed = false;
    notify_gdb(entry, JIT_REGISTER_FN);
    return 0;
}

static int add_stub(uintptr_t region, uint64_t cookie, uintptr_t start, size_t size, enum jit_stub_kind kind,
                    const char *name, const struct jit_symfile_range *ranges, size_t range_count, uintptr_t resume)
{
    size_t name_len = strlen(name) + 1;
    if (start < region || start + size > region + POOL_REGION_BYTES || size == 0 || range_count == 0)
        return EINVAL;
    pthread_mutex_lock(&jit_lock);
    int err = 0;
    struct region *r = region_at(region);
    if (!r || !pages_grow((void **)&r->stubs, &r->stubs_bytes, (r->stub_count + 1) * sizeof *r->stubs, 4096) ||
        !pages_grow((void **)&r->ranges, &r->ranges_bytes, (r->range_count + range_count) * sizeof *r->ranges,
                    4096) ||
        !pages_grow((void **)&r->strings, &r->strings_bytes, r->strings_size + name_len, 4096)) {
        err = ENOMEM;
    } else {
        /* Stubs are handed out in address order within a region: kept sorted. */
        size_t at = r->stub_count;
        while (at > 0 && r->stubs[at - 1].start > start)
            at--;
        memmove(&r->stubs[at + 1], &r->stubs[at], (r->stub_count - at) * sizeof *r->stubs);
        r->stubs[at] = (struct jit_symfile_stub){
            .start = start, .size = (uint32_t)size, .name = (uint32_t)r->strings_size,
            .first_range = (uint32_t)r->range_count, .range_count = (uint32_t)range_count, .kind = kind,
            .resume = resume,
        };
        r->stub_count++;
        memcpy(&r->ranges[r->range_count], ranges, range_count * sizeof *ranges);
        r->range_count += range_count;
        memcpy(r->strings + r->strings_size, name, name_len);
        r->strings_size += name_len;
        r->cookie = cookie;
        r->changed = true;
        if (!holds)
            err = publish(r);
    }
    pthread_mutex_unlock(&jit_lock);
    return err;
}

int jit_add_stub(uintptr_t region, uint64_t cookie, uintptr_t start, size_t size, enum jit_stub_kind kind,
                 const char *name, const struct jit_symfile_range *ranges, size_t range_count)
{
    return add_stub(region, cookie, start, size, kind, name, ranges, range_count, 0);
}

int jit_add_resuming_stub(uintptr_t region, uint64_t cookie, uintptr_t start, size_t size, const char *name,
                          const struct jit_symfile_range *ranges, size_t range_count, uintptr_t resume)
{
    return add_stub(region, cookie, start, size, JIT_STUB_STORE, name, ranges, range_count, resume);
}

void jit_set_shadow_layout(const struct jit_symfile_header *layout)
{
    pthread_mutex_lock(&jit_lock);
    shadow_layout = *layout;
    pthread_mutex_unlock(&jit_lock);
}

void jit_hold(void)
{
    pthread_mutex_lock(&jit_lock);
    holds++;
    pthread_mutex_unlock(&jit_lock);
}

void jit_release(void)
{
    pthread_mutex_lock(&jit_lock);
    if (holds > 0 && --holds == 0)
        for (size_t i = 0; i < region_count; i++)
            if (regions[i].changed)
                publish(&regions[i]);
    pthread_mutex_unlock(&jit_lock);
}

size_t jit_registered_regions(void)
{
    pthread_mutex_lock(&jit_lock);
    size_t n = 0;
    for (size_t i = 0; i < region_count; i++)
        n += regions[i].entry != NULL;
    pthread_mutex_unlock(&jit_lock);
    return n;
}
