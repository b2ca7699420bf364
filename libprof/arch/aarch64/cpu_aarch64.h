/* AArch64's forms of arch/cpu.h. */
#ifndef MEMPROF_ARCH_AARCH64_CPU_H
#define MEMPROF_ARCH_AARCH64_CPU_H
#include <elf.h>
#include <pthread.h>
#include <stdint.h>
#include <ucontext.h>

#define CPU_NAME "aarch64"

/* DWARF's numbers of x29, sp and x30 (the return address's column). */
#define CPU_DWARF_FP 29
#define CPU_DWARF_SP 31
#define CPU_DWARF_RA 30

#define CPU_RELOC_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define CPU_RELOC_GLOB_DAT R_AARCH64_GLOB_DAT

static inline void cpu_relax(void)
{
    __asm__ volatile("yield" ::: "memory");
}

static inline void cpu_prefetch(const void *p)
{
    __asm__ volatile("prfm pldl1keep, %0" : : "Q"(*(const char *)p));
}

/* The word at `offset` from the thread pointer (tpidr_el0; static TLS lies
 * above it here, past the 16-byte thread control block). */
static inline const char *cpu_tls_word(intptr_t offset)
{
    return *(const char *const *)((const char *)__builtin_thread_pointer() + offset);
}
#define CPU_STATIC_TLS_BELOW_TP 0

/* glibc's thread descriptor lies below the thread pointer here: asked. */
static inline uintptr_t cpu_pthread_self(void)
{
    return (uintptr_t)pthread_self();
}

/* No entry for memprof's own unwinder (the return address is in x30, not
 * at the entry's CFA-8): a backtrace starts in the unwinder itself. */
#define CPU_ENTRY_FP() ((uintptr_t)0)
#define CPU_ENTRY_CFA() ((uintptr_t)0)

#define CPU_HERE(pc, sp, fp) __asm__ volatile("adr %0, .\n\tmov %1, sp\n\tmov %2, x29" : "=r"(pc), "=r"(sp), "=r"(fp))

#define CPU_LIBUNWIND_PREFIX "_ULaarch64_"
/* unw_backtrace gives a frame here as its return address less one (inside
 * the call, for a line lookup); the return address, as on x86-64. */
static inline uintptr_t cpu_libunwind_return_address(uintptr_t ip)
{
    return ip & 3 ? (ip | 3) + 1 : ip;
}

/* A word only this thread writes, changed for readers of whole words in
 * other threads (a load-store architecture has no add to memory). */
static inline void cpu_word_add(uint64_t *word, uint64_t v)
{
    __atomic_store_n(word, __atomic_load_n(word, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
}

static inline void cpu_word_sub(uint64_t *word, uint64_t v)
{
    __atomic_store_n(word, __atomic_load_n(word, __ATOMIC_RELAXED) - v, __ATOMIC_RELAXED);
}

static inline void cpu_word_raise(uint64_t *word, uint64_t v)
{
    uint64_t now = __atomic_load_n(word, __ATOMIC_RELAXED);
    __atomic_store_n(word, v > now ? v : now, __ATOMIC_RELAXED);
}

static inline uintptr_t cpu_fault_pc(const void *context)
{
    return (uintptr_t)((const ucontext_t *)context)->uc_mcontext.pc;
}
#endif
