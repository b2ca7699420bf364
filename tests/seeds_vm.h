/* The seeds' allocator, shared by the suite's small C "VMs" (hook/callsite-vm.c,
 * hook/store-vm.c, heap/vm.c): objects from a static arena, freed onto a
 * static free list, as Ruby 1.8's newobj and add_freelist. Each program
 * writes its own newobj and add_freelist around these two macros: their
 * attributes (out of line, never cloned, inlined) are what it tests, and a
 * macro leaves the store to freelist in the function's own code at every
 * optimization level. */
#ifndef MEMPROF_TESTS_SEEDS_VM_H
#define MEMPROF_TESTS_SEEDS_VM_H

#ifndef SEEDS_ARENA
#define SEEDS_ARENA 4096
#endif

struct obj {
    struct obj *next;
    long kind, value;
};

static struct obj arena[SEEDS_ARENA];
static long arena_used;
static struct obj *freelist;

/* An object of `kind`: the free list's head when `reuse` and there is one,
 * else the arena's next slot. */
#define SEEDS_NEWOBJ(kind, reuse)                                   \
    ({                                                              \
        struct obj *o_ = (reuse) ? freelist : (struct obj *)0;      \
        if (o_)                                                     \
            freelist = o_->next;                                    \
        else                                                        \
            o_ = &arena[arena_used++ % SEEDS_ARENA];                \
        o_->kind = (kind);                                          \
        o_->value = (kind) * 3;                                     \
        o_;                                                         \
    })

/* The store memprof's --stores hooks: `o` becomes the free list's head. */
#define SEEDS_ADD_FREELIST(o) ((o)->next = freelist, freelist = (o))
#endif
