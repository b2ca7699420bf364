/* The entry stub, instruction by instruction (see intercept.h):
 *
 *     push %rbp; mov %rsp, %rbp          frame pointer chain
 *     sub $FRAME, %rsp                   struct intercept_regs (16-aligned)
 *     mov %rdi..%rax, 0..48(%rsp)        the argument registers
 *     movdqu %xmm0..7, 64..176(%rsp)
 *     movabs $id, %rdi; mov %rsp, %rsi   handler(id, regs)
 *     movabs $pre, %r11; call *%r11
 *     movdqu 64..176(%rsp), %xmm0..7     the registers, as the handler left them
 *     mov 0..48(%rsp), %rdi..%rax
 *     mov %rbp, %rsp; pop %rbp
 *     jmp *original(%rip)                the original, as if called directly
 *     original: .quad 0
 *
 * On entry %rsp is 8 mod 16 (the return address); after push %rbp it is 0,
 * and FRAME is a multiple of 16, so the handler is called aligned. Only
 * caller-saved registers are used (r11 for the handler's address). */
#include "intercept.h"
#include "pool.h"
#include "got.h"
#include "../arch/x86_64/emit.h"
#include "../util/pages.h"
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

#define FRAME ((int32_t)sizeof(struct intercept_regs))
_Static_assert(sizeof(struct intercept_regs) % 16 == 0, "the frame keeps the stack aligned");

static const struct { enum reg reg; size_t offset; } saved_regs[] = {
    { RDI, offsetof(struct intercept_regs, rdi) }, { RSI, offsetof(struct intercept_regs, rsi) },
    { RDX, offsetof(struct intercept_regs, rdx) }, { RCX, offsetof(struct intercept_regs, rcx) },
    { R8, offsetof(struct intercept_regs, r8) },   { R9, offsetof(struct intercept_regs, r9) },
    { RAX, offsetof(struct intercept_regs, rax) },
};
#define SAVED_REGS (sizeof saved_regs / sizeof *saved_regs)

static struct mem xmm_slot(int i)
{
    return MEM(RSP, (int32_t)(offsetof(struct intercept_regs, xmm) + 16 * (size_t)i));
}

/* --- the shadow stack of return addresses ---------------------------------
 * Per thread, one pointer in initial-exec TLS to an mmap'd array (no malloc:
 * the hooked function may be malloc itself). Each frame remembers where the
 * caller's return address was on the stack: frames whose place is at or
 * below a newer one's, or below the stack pointer at a return, were left by
 * longjmp or an exception, and are dropped. */
#define SHADOW_FRAMES 4096

struct shadow_frame {
    uintptr_t slot;          /* where the return address was */
    uintptr_t return_to;     /* the caller's return address */
    uint32_t id;
    intercept_post_fn *post;
};

struct shadow_stack {
    size_t depth;
    struct shadow_frame frames[SHADOW_FRAMES];
};

static __thread struct shadow_stack *shadow __attribute__((tls_model("initial-exec")));

size_t intercept_shadow_depth(void)
{
    return shadow ? shadow->depth : 0;
}

/* Called by a full stub's entry: keep the return address, send the return
 * to the return stub, then run the pre-handler. */
struct full_hook { uint32_t id; intercept_pre_fn *pre; intercept_post_fn *post; uintptr_t return_stub; };

static void enter_full(const struct full_hook *h, struct intercept_regs *regs, uintptr_t *slot)
{
    if (!shadow)
        shadow = pages_alloc(sizeof *shadow);
    struct shadow_stack *s = shadow;
    if (s) {
        while (s->depth > 0 && s->frames[s->depth - 1].slot <= (uintptr_t)slot)
            s->depth--;    /* left by longjmp: this call's frame is at or above it */
        if (s->depth < SHADOW_FRAMES) {
            s->frames[s->depth++] = (struct shadow_frame){ (uintptr_t)slot, *slot, h->id, h->post };
            *slot = h->return_stub;
        }
    }
    h->pre(h->id, regs);
}

/* Called by the return stub with the return value and the stack pointer
 * just above where the return address was; returns where to go. */
static uintptr_t leave_full(const struct intercept_return *ret, uintptr_t sp)
{
    struct shadow_stack *s = shadow;
    uintptr_t slot = sp - sizeof(uintptr_t);
    while (s && s->depth > 0 && s->frames[s->depth - 1].slot < slot)
        s->depth--;        /* left by longjmp from deeper calls */
    if (!s || s->depth == 0 || s->frames[s->depth - 1].slot != slot) {
        static const char msg[] = "memprof: a hooked function returned to a frame it has no record of\n";
        ssize_t n = write(2, msg, sizeof msg - 1);
        (void)n;
        abort();           /* nowhere right to return to */
    }
    struct shadow_frame f = s->frames[--s->depth];
    f.post(f.id, ret);
    return f.return_to;
}

/* Exceptions: the unwinder reads each frame's return address to find the
 * caller's unwind information; a return stub's address has none, and it
 * would stop there (std::terminate). Before unwinding starts, this thread's
 * return addresses are put back and its shadow stack emptied: the frames
 * being unwound then return as if never hooked, without post-handlers (as
 * for longjmp). _Unwind_RaiseException (throw) and _Unwind_ForcedUnwind
 * (pthread_cancel, pthread_exit) are hooked through the GOT for this. */
static void restore_return_addresses(void)
{
    struct shadow_stack *s = shadow;
    if (!s)
        return;
    while (s->depth > 0) {
        struct shadow_frame *f = &s->frames[--s->depth];
        *(uintptr_t *)f->slot = f->return_to;
    }
}

typedef int unwind_raise_fn(void *exception);
typedef int unwind_forced_fn(void *exception, void *stop, void *stop_argument);
static unwind_raise_fn *next_raise;
static unwind_forced_fn *next_forced;

static int hook_raise(void *exception)
{
    restore_return_addresses();
    return next_raise(exception);
}

static int hook_forced(void *exception, void *stop, void *stop_argument)
{
    restore_return_addresses();
    return next_forced(exception, stop, stop_argument);
}

static struct got_hook unwind_hooks[] = {
    { .symbol = "_Unwind_RaiseException", .replacement = (void *)hook_raise, .next = (void **)&next_raise },
    { .symbol = "_Unwind_ForcedUnwind", .replacement = (void *)hook_forced, .next = (void **)&next_forced },
};

/* With every full stub made: a process without the unwinder yet (a C
 * program that later loads a C++ library) gets the hooks once it has it. */
static void hook_unwinder(void)
{
    for (size_t i = 0; i < sizeof unwind_hooks / sizeof *unwind_hooks; i++)
        got_hook_install(&unwind_hooks[i]);   /* already hooked: nothing to do */
}

/* The return stub (one per full stub):
 *
 *     push %rax; push %rdx               the return value
 *     sub $32, %rsp; movdqu %xmm0, (%rsp); movdqu %xmm1, 16(%rsp)
 *     mov %rsp, %rdi; lea 48(%rsp), %rsi  leave_full(ret, sp)
 *     movabs $leave_full, %r11; call *%r11
 *     mov %rax, %r11                     where to return
 *     movdqu (%rsp), %xmm0; movdqu 16(%rsp), %xmm1; add $32, %rsp
 *     pop %rdx; pop %rax
 *     jmp *%r11
 *
 * After the original's ret the stack is 16-aligned; 48 bytes keep it so. */
static void emit_return_stub(struct emitter *e)
{
    emit_push(e, RAX);
    emit_push(e, RDX);
    emit_sub_imm(e, RSP, 32);
    emit_movdqu_store(e, MEM(RSP, 0), XMM0);
    emit_movdqu_store(e, MEM(RSP, 16), XMM1);
    emit_mov(e, RDI, RSP);
    emit_lea(e, RSI, MEM(RSP, 48));
    emit_mov_imm64(e, R11, (uint64_t)(uintptr_t)leave_full);
    emit_call_reg(e, R11);
    emit_mov(e, R11, RAX);
    emit_movdqu_load(e, XMM0, MEM(RSP, 0));
    emit_movdqu_load(e, XMM1, MEM(RSP, 16));
    emit_add_imm(e, RSP, 32);
    emit_pop(e, RDX);
    emit_pop(e, RAX);
    emit_jmp_reg(e, R11);
}
_Static_assert(offsetof(struct intercept_return, rdx) == 32 && offsetof(struct intercept_return, rax) == 40,
               "the return stub's pushes lay out struct intercept_return");

/* Emit the stub for code at `pc`; returns where its original slot runs.
 * With `full`, the handler called is enter_full(full, regs, &return
 * address) instead of pre(id, regs). */
static uintptr_t emit_entry_stub(struct emitter *e, uint32_t id, intercept_pre_fn *pre,
                                 const struct full_hook *full)
{
    emit_push(e, RBP);
    emit_mov(e, RBP, RSP);
    emit_sub_imm(e, RSP, FRAME);
    for (size_t i = 0; i < SAVED_REGS; i++)
        emit_mov_store(e, MEM(RSP, (int32_t)saved_regs[i].offset), saved_regs[i].reg);
    for (int i = 0; i < 8; i++)
        emit_movdqu_store(e, xmm_slot(i), (enum xmm)i);
    if (full) {
        emit_mov_imm64(e, RDI, (uint64_t)(uintptr_t)full);
        emit_mov(e, RSI, RSP);
        emit_lea(e, RDX, MEM(RBP, 8));   /* the return address */
        emit_mov_imm64(e, R11, (uint64_t)(uintptr_t)enter_full);
    } else {
        emit_mov_imm64(e, RDI, id);
        emit_mov(e, RSI, RSP);
        emit_mov_imm64(e, R11, (uint64_t)(uintptr_t)pre);
    }
    emit_call_reg(e, R11);
    for (int i = 0; i < 8; i++)
        emit_movdqu_load(e, (enum xmm)i, xmm_slot(i));
    for (size_t i = 0; i < SAVED_REGS; i++)
        emit_mov_load(e, saved_regs[i].reg, MEM(RSP, (int32_t)saved_regs[i].offset));
    emit_mov(e, RSP, RBP);
    emit_pop(e, RBP);
    /* The slot follows the jump through it, 8-aligned. */
    uintptr_t jmp_end = emit_here(e) + 6;
    uintptr_t slot = (jmp_end + 7) & ~(uintptr_t)7;
    emit_jmp_rip(e, slot);
    while (emit_here(e) < slot)
        emit_int3(e);
    emit_quad(e, 0);
    return slot;
}

int intercept_entry_stub(uint32_t id, intercept_pre_fn *pre, uintptr_t near, struct intercept_stub *out)
{
    enum { STUB_MAX = 256 };
    struct code_chunk chunk;
    int err = pool_reserve(near, STUB_MAX, &chunk);
    if (err)
        return err;
    struct emitter e;
    emit_init(&e, chunk.write, chunk.size, chunk.exec);
    uintptr_t slot = emit_entry_stub(&e, id, pre, NULL);
    if (e.error)
        return ENOMEM;   /* STUB_MAX is too small: a bug, caught by the tests */
    *out = (struct intercept_stub){ chunk.exec, (void **)(chunk.write + (slot - chunk.exec)), e.len };
    return 0;
}

int intercept_full_stub(uint32_t id, intercept_pre_fn *pre, intercept_post_fn *post, uintptr_t near,
                        struct intercept_stub *out)
{
    /* The chunk holds the hook's data (read by enter_full where the code
     * runs), then the return stub, then the entry stub. */
    enum { DATA = (sizeof(struct full_hook) + 15) & ~15, STUB_MAX = DATA + 384 };
    hook_unwinder();
    struct code_chunk chunk;
    int err = pool_reserve(near, STUB_MAX, &chunk);
    if (err)
        return err;
    const struct full_hook *h = (const struct full_hook *)chunk.exec;
    struct emitter e;
    emit_init(&e, chunk.write + DATA, chunk.size - DATA, chunk.exec + DATA);
    uintptr_t return_stub = emit_here(&e);
    emit_return_stub(&e);
    while (emit_here(&e) % 16)
        emit_int3(&e);
    uintptr_t entry = emit_here(&e);
    *(struct full_hook *)chunk.write = (struct full_hook){ id, pre, post, return_stub };
    uintptr_t slot = emit_entry_stub(&e, id, pre, h);
    if (e.error)
        return ENOMEM;
    *out = (struct intercept_stub){ entry, (void **)(chunk.write + (slot - chunk.exec)), e.len };
    return 0;
}
