/* The seeds' free path in a small C "VM": add_freelist() stores a freed
 * object into a static `freelist`. memprof finds the stores to `freelist`
 * inside add_freelist by decoding it, sends each through a stub that replays
 * the store and calls a handler with the stored value, and restores the code
 * byte for byte. Built -O0 and -O2 by store-site.test (add_freelist kept out
 * of line: its inlined copies need DWARF). (TAP) */
#include "objfile/symbolizer.h"
#include "objfile/symbols.h"
#include "hook/store_site.h"
#include "../seeds_vm.h"
#include "../tap.h"
#include <errno.h>
#include <link.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static long freed_by_program;

__attribute__((noinline)) static struct obj *newobj(long kind)
{
    return SEEDS_NEWOBJ(kind, 1);
}

__attribute__((noinline, noclone, aligned(64))) static void add_freelist(struct obj *o)
{
    SEEDS_ADD_FREELIST(o);
    freed_by_program++;
}

/* A constant stored: movq $0, freelist(%rip), 11 bytes (longer than one
 * 8-byte patch: only its first 5 become the jmp). */
/* Aligned, as add_freelist: each patch's 8 bytes must lie in one cache line,
 * which the code's layout decides otherwise. */
__attribute__((noinline, noclone, aligned(64))) static void reset_freelist(void)
{
    freelist = NULL;
}

__attribute__((noinline)) long run_vm(long n)
{
    reset_freelist();
    arena_used = 0;
    long a = 1, b = 2;
    for (long i = 0; i < n; i++) {
        struct obj *x = newobj(1);
        a += x->value + i;
        if (i % 3 == 0) {
            struct obj *y = newobj(2);
            b ^= y->value + a;
            add_freelist(y);
        }
        add_freelist(x);
    }
    return a + b;
}

/* --- the hook: every value stored ---------------------------------------- */
static long stored, stored_nonzero_sum, stored_zero;
static uintptr_t last_stored;
static bool stop_in_handler;

__attribute__((noinline)) static void on_store(uint32_t id, uint64_t value)
{
    if (value == 0) {   /* reset_freelist */
        stored_zero += id;
        return;
    }
    stored += id;
    last_stored = value;
    stored_nonzero_sum += value != 0;
    if (stop_in_handler) {
        stop_in_handler = false;
        raise(SIGTRAP);   /* for GDB: bt here */
    }
}

static uintptr_t bias;
static int find_bias(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size, (void)arg;
    bias = info->dlpi_addr;
    return 1;
}

/* Stores between an instruction that sets the flags and one that reads
 * them: the stub must keep every arithmetic flag (OF SF ZF AF PF CF). Each
 * returns the flags after its store. */
long flag_target;
long flags_store_set(long v);     /* OF SF AF PF CF set, ZF clear */
long flags_store_clear(long v);   /* ZF PF set, the others clear */
__asm__(".text\n.p2align 6\n.globl flags_store_set\n.type flags_store_set, @function\nflags_store_set:\n"
        "\tmovabs $0x7fffffffffffffff, %rax\n\tadd $1, %rax\n\tstc\n"
        "\tmov %rdi, flag_target(%rip)\n\tpushfq\n\tpop %rax\n\tret\n"
        ".size flags_store_set, .-flags_store_set\n"
        ".p2align 6\n.globl flags_store_clear\n.type flags_store_clear, @function\nflags_store_clear:\n"
        "\txor %eax, %eax\n\tmov %rdi, flag_target(%rip)\n\tpushfq\n\tpop %rax\n\tret\n"
        ".size flags_store_clear, .-flags_store_clear\n");
#define ARITHMETIC_FLAGS 0x8D5L

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000;
    stop_in_handler = argc > 2;
    dl_iterate_phdr(find_bias, NULL);
    char err[256];
    struct symbolizer *sym = symbolizer_open("/proc/self/exe", err, sizeof err);
    ok(sym != NULL, "the program's symbols");
    if (!sym)
        return tap_done();
    const struct elf_symbols *table = symbolizer_symbols(sym);
    struct code_range in = { 0 }, all = { 0 }, reset = { 0 }, flag_code[2] = { { 0 }, { 0 } };
    for (size_t i = 0; i < elf_symbols_count(table); i++) {
        const char *name;
        uint64_t start, size;
        elf_symbols_get(table, i, &name, &start, &size);
        if (strcmp(name, "add_freelist") == 0)
            in = (struct code_range){ bias + start, size };
        if (strcmp(name, "newobj") == 0)
            all = (struct code_range){ bias + start, size };
        if (strcmp(name, "reset_freelist") == 0)
            reset = (struct code_range){ bias + start, size };
        if (strcmp(name, "flags_store_set") == 0)
            flag_code[0] = (struct code_range){ bias + start, size };
        if (strcmp(name, "flags_store_clear") == 0)
            flag_code[1] = (struct code_range){ bias + start, size };
    }
    ok(in.size > 0, "add_freelist found in the symbol table (%zu bytes)", in.size);

    long plain = run_vm(n), freed = freed_by_program;
    unsigned char *before = malloc(in.size + 8);
    memcpy(before, (const void *)in.start, in.size + 8);

    struct store_patch patch, in_newobj;
    ok(store_sites_find(&in, 1, (uintptr_t)&freelist, &patch) == 0 && patch.count == 1,
       "one store to freelist in add_freelist (%zu)", patch.count);
    ok(store_sites_find(&all, 1, (uintptr_t)&freelist, &in_newobj) == 0 && in_newobj.count == 1,
       "and one in newobj, which is not asked for (%zu)", in_newobj.count);
    store_sites_free(&in_newobj);
    ok(store_sites_apply(&patch, 1, "freelist", on_store, 2) == ENOENT &&
       memcmp(before, (const void *)in.start, in.size + 8) == 0,
       "expecting another number of sites patches nothing");
    ok(store_sites_apply(&patch, 1, "freelist", on_store, 1) == 0, "the store goes through a stub");

    freed_by_program = 0;
    long hooked = run_vm(n);
    ok(hooked == plain, "the VM computes the same through the stub (%ld, %ld)", hooked, plain);
    ok(stored == freed && stored == freed_by_program, "every store seen once: %ld (the program freed %ld)", stored,
       freed_by_program);
    ok(stored_nonzero_sum == stored && last_stored == (uintptr_t)freelist,
       "the handler gets the value stored (the last: the free list's head)");

    /* A constant stored, by an instruction longer than the patch. */
    struct store_patch constant;
    unsigned char *reset_before = malloc(reset.size + 16);
    memcpy(reset_before, (const void *)(reset.start - 8), reset.size + 16);
    ok(store_sites_find(&reset, 1, (uintptr_t)&freelist, &constant) == 0 && constant.count == 1 &&
           constant.sites[0].immediate && constant.sites[0].imm == 0 && constant.sites[0].length == 11,
       "reset_freelist's movq $0, freelist(%%rip) found: 11 bytes, a constant");
    ok(store_sites_apply(&constant, 2, "freelist", on_store, 1) == 0, "patched with its first 5 bytes");
    freelist = (struct obj *)&arena[1];
    ok(run_vm(n) == plain && stored_zero == 2 && freelist != NULL,
       "the constant is stored, and the handler told (%ld)", stored_zero);
    ok(store_sites_restore(&constant) == 0 && memcmp(reset_before, (const void *)(reset.start - 8), reset.size + 16) == 0,
       "restored byte for byte");
    store_sites_free(&constant);

    ok(store_sites_restore(&patch) == 0, "restored");
    ok(memcmp(before, (const void *)in.start, in.size + 8) == 0, "add_freelist's bytes equal the original's");
    long seen = stored;
    ok(run_vm(n) == plain && stored == seen, "after restoring, no store goes through the stub");
    store_sites_free(&patch);

    long set = flags_store_set(1) & ARITHMETIC_FLAGS, clear = flags_store_clear(2) & ARITHMETIC_FLAGS;
    struct store_patch flags;
    ok(set == 0x895 && clear == 0x44, "the flags before patching: %#lx and %#lx", set, clear);
    ok(store_sites_find(flag_code, 2, (uintptr_t)&flag_target, &flags) == 0 && flags.count == 2 &&
           store_sites_apply(&flags, 3, "flag_target", on_store, 2) == 0,
       "both stores to flag_target go through stubs");
    long stored_before = stored;
    long set_hooked = flags_store_set(5) & ARITHMETIC_FLAGS, clear_hooked = flags_store_clear(6) & ARITHMETIC_FLAGS;
    ok(set_hooked == set && clear_hooked == clear && flag_target == 6 && stored == stored_before + 2 * 3,
       "every arithmetic flag kept across the stubs (%#lx, %#lx)", set_hooked, clear_hooked);
    ok(store_sites_restore(&flags) == 0, "restored");
    store_sites_free(&flags);
    symbolizer_close(sym);
    return tap_done();
}
