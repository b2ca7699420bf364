/* x86-64's forms of arch/cpu.h. */
#ifndef MEMPROF_ARCH_X86_64_CPU_H
#define MEMPROF_ARCH_X86_64_CPU_H
#include <elf.h>
#include <stdint.h>
#include <ucontext.h>

#define CPU_NAME "x86-64"

/* DWARF's numbers of %rbp, %rsp and the return address's column. */
#define CPU_DWARF_FP 6
#define CPU_DWARF_SP 7
#define CPU_DWARF_RA 16

/* The dynamic relocations of a GOT's slots: a PLT's, and a function's or a
 * variable's address. */
#define CPU_RELOC_JUMP_SLOT R_X86_64_JUMP_SLOT
#define CPU_RELOC_GLOB_DAT R_X86_64_GLOB_DAT

static inline void cpu_relax(void)
{
    __builtin_ia32_pause();
}

/* Not __builtin_prefetch: GCC drops it from code it thinks cold. */
static inline void cpu_prefetch(const void *p)
{
    __asm__ volatile("prefetcht0 %0" : : "m"(*(const char *)p));
}

/* The word at `offset` from the thread pointer (static TLS, below it here),
 * in one load. */
static inline const char *cpu_tls_word(intptr_t offset)
{
    const char *word;
    __asm__("mov %%fs:(%1), %0" : "=r"(word) : "r"(offset));
    return word;
}
#define CPU_STATIC_TLS_BELOW_TP 1

/* pthread_self() without the call: glibc's thread descriptor is at the
 * thread pointer. */
static inline uintptr_t cpu_pthread_self(void)
{
    return (uintptr_t)__builtin_thread_pointer();
}

/* At a hook's entry, read first: the caller's frame pointer, and the hook's
 * CFA (its return address just below), where memprof's own unwinder starts
 * a backtrace of the hook's caller. */
#define CPU_ENTRY_FP()                                 \
    ({                                                 \
        uintptr_t fp_;                                 \
        __asm__ volatile("mov %%rbp, %0" : "=r"(fp_)); \
        fp_;                                           \
    })
#define CPU_ENTRY_CFA() ((uintptr_t)__builtin_dwarf_cfa())

/* This code's pc, stack pointer and frame pointer. */
#define CPU_HERE(pc, sp, fp) \
    __asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2" : "=r"(pc), "=r"(sp), "=r"(fp))

/* A word only this thread writes, changed in place for readers of whole
 * words in other threads: one instruction on memory each (GCC made a
 * relaxed store of a sum a load, an add and a store; the raise a load and a
 * jump). */
static inline void cpu_word_add(uint64_t *word, uint64_t v)
{
    __asm__("addq %1, %0" : "+m"(*word) : "er"(v) : "cc");
}

static inline void cpu_word_sub(uint64_t *word, uint64_t v)
{
    __asm__("subq %1, %0" : "+m"(*word) : "er"(v) : "cc");
}

/* *word raised to `v` if below: a compare and a move from memory, no jump. */
static inline void cpu_word_raise(uint64_t *word, uint64_t v)
{
    __asm__("cmpq %1, %0\n\tcmovb %1, %0" : "+r"(v) : "m"(*word) : "cc");
    __atomic_store_n(word, v, __ATOMIC_RELAXED);
}

/* libunwind's local unwinder's names (libunwind.h's _UL##arch##_). */
#define CPU_LIBUNWIND_PREFIX "_ULx86_64_"
/* unw_backtrace's frames are return addresses. */
static inline uintptr_t cpu_libunwind_return_address(uintptr_t ip)
{
    return ip;
}

static inline uintptr_t cpu_fault_pc(const void *context)
{
    return (uintptr_t)((const ucontext_t *)context)->uc_mcontext.gregs[REG_RIP];
}
#endif
