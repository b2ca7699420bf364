/* The generic interceptor's entry stub: a function hooked with it (through
 * a GOT slot, or any jump to the stub) first calls a C pre-handler with the
 * hook's id and every argument register, saved; then the original runs with
 * the registers as the handler left them.
 *
 * The stub keeps a frame pointer chain (push %rbp; mov %rsp, %rbp) so that
 * debuggers and unwinders walk through it, and aligns the stack to 16 bytes
 * for the call (a caller of a static function need not have: compilers
 * know when the callee does not care). */
#ifndef MEMPROF_HOOK_INTERCEPT_H
#define MEMPROF_HOOK_INTERCEPT_H
#include <stddef.h>
#include <stdint.h>

/* The argument registers at the call, as the stub saved them. A handler
 * may change them: the original then gets the new values. */
struct intercept_regs {
    uint64_t rdi, rsi, rdx, rcx, r8, r9, rax;   /* rax: vector count for varargs */
    uint64_t caller_slot;   /* where the return address is (intercept_caller reads it) */
    struct { uint64_t lo, hi; } xmm[8];
};

typedef void intercept_pre_fn(uint32_t id, struct intercept_regs *regs);

struct intercept_stub {
    uintptr_t entry;     /* where to send calls */
    void **original;     /* where the stub finds the original (writable) */
    size_t size;         /* bytes of the entry stub's code */
    uintptr_t return_stub;   /* a full stub's return stub: where its hooked function returns (else 0) */
};

/* Generate an entry stub in a trampoline pool near `near` (0: anywhere).
 * 0, or an errno (ENOSPC, ENOMEM). The stub lives for the process. It is
 * registered with GDB's JIT interface as "memprof entry stub for NAME". */
int intercept_entry_stub(uint32_t id, const char *name, intercept_pre_fn *pre, uintptr_t near,
                         struct intercept_stub *out);

/* What a hooked function returned: rax and rdx (integers, pointers), xmm0
 * and xmm1 (floating point). */
struct intercept_return {
    struct { uint64_t lo, hi; } xmm[2];
    uint64_t rdx, rax;
};
/* `data`: the two words the pre-handler left in intercept_call_data(). */
typedef void intercept_post_fn(uint32_t id, const struct intercept_return *ret, const uint64_t data[2]);

/* An entry stub that also sees the return: before the original runs, the
 * caller's return address is kept on this thread's shadow stack and replaced
 * by a return stub's, which calls `post` with the return value and goes back
 * to the caller. Correct under recursion and across threads; frames left by
 * longjmp or an exception are dropped from the shadow stack by stack pointer
 * (never returned to). A call nested deeper than the shadow stack holds
 * (4096 frames) runs without its post-handler. */
int intercept_full_stub(uint32_t id, const char *name, intercept_pre_fn *pre, intercept_post_fn *post,
                        uintptr_t near, struct intercept_stub *out);
/* A full stub for `target` that keeps every register but the return
 * value's (rax, rdx, xmm0, xmm1) as the caller and `target` leave them:
 * for calls rewritten in code built with -fipa-ra, whose callers may rely
 * on any register their callee is known not to change. It jumps to
 * `target` itself (`original` is NULL). */
int intercept_keeping_stub(uint32_t id, const char *name, intercept_pre_fn *pre, intercept_post_fn *post,
                           uintptr_t target, uintptr_t near, struct intercept_stub *out);
/* In a pre-handler: the address the hooked function will return to (its
 * caller), also when a full stub has replaced it. */
uintptr_t intercept_caller(const struct intercept_regs *regs);
/* In a full stub's pre-handler: two words kept with this call and given to
 * its post-handler; NULL when the shadow stack is full (the post-handler
 * then does not run for this call). */
uint64_t *intercept_call_data(void);
/* Frames on this thread's shadow stack (for tests and status). */
size_t intercept_shadow_depth(void);
#endif
