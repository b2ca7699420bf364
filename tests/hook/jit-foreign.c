/* Another JIT in the process: it registers symfiles that are not memprof's
 * (random bytes, and a damaged memprof header) with GDB's JIT interface
 * through descriptors of its own. GDB with memprof's reader must refuse
 * them, not crash, and go on debugging (jit-unwind.test). */
#include "hook/jit_symfile.h"
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct jit_code_entry {
    struct jit_code_entry *next_entry, *prev_entry;
    const char *symfile_addr;
    uint64_t symfile_size;
};
struct jit_descriptor {
    uint32_t version, action_flag;
    struct jit_code_entry *relevant_entry, *first_entry;
};

struct jit_descriptor __jit_debug_descriptor = { 1, 0, 0, 0 };

__attribute__((noinline, noipa)) void __jit_debug_register_code(void)
{
    __asm__ volatile("" ::: "memory");
}

static void add(struct jit_code_entry *e, const void *symfile, size_t size)
{
    e->symfile_addr = symfile;
    e->symfile_size = size;
    e->prev_entry = NULL;
    e->next_entry = __jit_debug_descriptor.first_entry;
    if (e->next_entry)
        e->next_entry->prev_entry = e;
    __jit_debug_descriptor.first_entry = e;
    __jit_debug_descriptor.relevant_entry = e;
    __jit_debug_descriptor.action_flag = 1;
    __jit_debug_register_code();
    __jit_debug_descriptor.action_flag = 0;
}

int main(void)
{
    static unsigned char noise[256];
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < sizeof noise; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        noise[i] = (unsigned char)x;
    }
    static struct { struct jit_symfile_header h; unsigned char rest[64]; } damaged;
    memcpy(damaged.h.magic, JIT_SYMFILE_MAGIC, 8);
    damaged.h.version = JIT_SYMFILE_VERSION;
    damaged.h.header_size = sizeof damaged.h;
    damaged.h.total_size = sizeof damaged;
    damaged.h.stub_count = 1000000;
    damaged.h.stub_size = 0xffffffff;
    static struct jit_code_entry a, b;
    add(&a, noise, sizeof noise);
    add(&b, &damaged, sizeof damaged);
    raise(SIGTRAP);
    puts("jit-foreign: done");
    return 0;
}
