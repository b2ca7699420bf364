/* The entry stub, instruction by instruction (see intercept.h):
 *
 *     push %rbp; mov %rsp, %rbp          frame pointer chain
 *     and $-16, %rsp                     the caller may not have aligned it
 *     sub $FRAME, %rsp                   struct intercept_regs
 *     mov %rdi..%rax, 0..48(%rsp)        the argument registers
 *     movdqu %xmm0..7, 64..176(%rsp)
 *     lea 8(%rbp), %r11; mov %r11, 56(%rsp)   where the return address is
 *     movabs $id, %rdi; lea (%rsp), %rsi handler(id, regs)
 *     movabs $pre, %r11; call *%r11
 *     movdqu 64..176(%rsp), %xmm0..7     the registers, as the handler left them
 *     mov 0..48(%rsp), %rdi..%rax
 *     mov %rbp, %rsp; pop %rbp
 *     movabs $original, %r11; mov (%r11), %r11; jmp *%r11
 *                                        the original, as if called directly
 *
 * Only caller-saved registers are used (r11 for the handler's address).
 * The stub that keeps every register (intercept_keeping_stub) also saves
 * r10, r11 and xmm8-15 below the registers the handler sees, and ends with
 * jmp *slot(%rip) to a target fixed in the stub. */
#include "intercept.h"
#include "pool.h"
#include "got.h"
#include "jit.h"
#include "stub_frames.h"
#include "../arch/x86_64/emit.h"
#include "../util/pages.h"
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
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

/* --- the shadow stack of return addresses ---------------------------------
 * Per thread, one pointer in initial-exec TLS to an mmap'd array (no malloc:
 * the hooked function may be malloc itself). Each frame remembers where the
 * caller's return address was on the stack: frames whose place is at or
 * below a newer one's, or below the stack pointer at a return, were left by
 * longjmp or an exception, and are dropped.
 *
 * Every thread's shadow stack is on one list, which the JIT symfile points
 * at: GDB's reader finds the real return address of a return stub from the
 * stack address it was at, without this thread's TLS (doc/jit-symfile.md). */
#define SHADOW_FRAMES 4096

struct shadow_frame {
    uintptr_t slot;          /* where the return address was */
    uintptr_t return_to;     /* the caller's return address */
    uint32_t id;
    intercept_post_fn *post;
    uint64_t data[2];        /* the pre-handler's, for the post-handler */
};

struct shadow_stack {
    struct shadow_stack *next;   /* every thread's, for debuggers */
    uint64_t depth;
    struct shadow_frame frames[SHADOW_FRAMES];
};

static __thread struct shadow_stack *shadow __attribute__((tls_model("initial-exec")));
static struct shadow_stack *shadow_stacks;

static struct shadow_stack *new_shadow_stack(void)
{
    struct shadow_stack *s = pages_alloc(sizeof *s);
    if (!s)
        return NULL;
    struct shadow_stack *top = __atomic_load_n(&shadow_stacks, __ATOMIC_ACQUIRE);
    do
        s->next = top;
    while (!__atomic_compare_exchange_n(&shadow_stacks, &top, s, true, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE));
    return s;
}

static void describe_shadow_stacks(void)
{
    jit_set_shadow_layout(&(struct jit_symfile_header){
        .shadow_list = (uintptr_t)&shadow_stacks,
        .shadow_next = offsetof(struct shadow_stack, next),
        .shadow_depth = offsetof(struct shadow_stack, depth),
        .shadow_frames = offsetof(struct shadow_stack, frames),
        .shadow_capacity = SHADOW_FRAMES,
        .shadow_frame_size = sizeof(struct shadow_frame),
        .shadow_slot = offsetof(struct shadow_frame, slot),
        .shadow_return_to = offsetof(struct shadow_frame, return_to),
    });
}

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
        shadow = new_shadow_stack();
    struct shadow_stack *s = shadow;
    if (s) {
        while (s->depth > 0 && s->frames[s->depth - 1].slot <= (uintptr_t)slot)
            s->depth--;    /* left by longjmp: this call's frame is at or above it */
        if (s->depth < SHADOW_FRAMES) {
            s->frames[s->depth++] = (struct shadow_frame){ (uintptr_t)slot, *slot, h->id, h->post, { 0, 0 } };
            *slot = h->return_stub;
        }
    }
    h->pre(h->id, regs);
}

uintptr_t intercept_caller(const struct intercept_regs *regs)
{
    uintptr_t slot = regs->caller_slot;
    struct shadow_stack *s = shadow;
    if (s && s->depth > 0 && s->frames[s->depth - 1].slot == slot)
        return s->frames[s->depth - 1].return_to;
    return *(const uintptr_t *)slot;
}

uint64_t *intercept_call_data(void)
{
    struct shadow_stack *s = shadow;
    return s && s->depth > 0 ? s->frames[s->depth - 1].data : NULL;
}

/* Called by the return stub with the return value and the stack pointer
 * just above where the return address was; puts the return address back
 * there (for debuggers: the frame is popped next) and returns it. */
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
    struct shadow_frame f = s->frames[s->depth - 1];
    *(uintptr_t *)slot = f.return_to;
    s->depth--;
    f.post(f.id, ret, f.data);
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

/* A stub for GDB (jit.h): its name and the frame ranges the emitter booked. */
static void describe(const struct stub_frames *f, const struct code_chunk *chunk, uintptr_t end,
                     enum jit_stub_kind kind, const char *what, const char *name)
{
    char text[160];
    snprintf(text, sizeof text, "memprof %s for %s", what, name && *name ? name : "?");
    jit_add_stub(chunk->region, chunk->cookie, f->start, end - f->start, kind, text, f->r, f->count);
}

/* Both stubs' frame (the emitter books its ranges): the caller's CFA is 8 above the
 * return address (wherever that is), rbp saved below it, and the stack
 * aligned to 16 bytes however the caller left it (a caller of a static
 * function need not align it: compilers know when the callee does not
 * care). */
static void enter_aligned_frame(struct emitter *e)
{
    emit_push(e, RBP);
    emit_mov(e, RBP, RSP);
    emit_and_imm(e, RSP, -16);
}

static void leave_aligned_frame(struct emitter *e)
{
    emit_mov(e, RSP, RBP);
    emit_pop(e, RBP);
}

/* The return stub (one per full stub). Its first byte is never run: the
 * return address written over the caller's is the stub's start + 1, so that
 * a debugger, which looks up a caller's frame at its return address - 1,
 * finds this stub.
 *
 *     nop
 *     push $0                            where the return address was: put back by leave_full
 *     push %rbp; mov %rsp, %rbp; and $-16, %rsp
 *    [push %r11 ... %rdi; sub $232, %rsp; movdqu %xmm2..15]   with `all`
 *     push %rax; push %rdx               the return value
 *     sub $32, %rsp; movdqu %xmm0, (%rsp); movdqu %xmm1, 16(%rsp)
 *     mov %rsp, %rdi; lea 16(%rbp), %rsi  leave_full(ret, sp)
 *     movabs $leave_full, %r11; call *%r11
 *     movdqu (%rsp), %xmm0; movdqu 16(%rsp), %xmm1; add $32, %rsp
 *     pop %rdx; pop %rax
 *    [movdqu %xmm2..15; add $232, %rsp; pop %rdi ... %r11]
 *     mov %rbp, %rsp; pop %rbp           to the slot, which holds the return address again
 *     add $8, %rsp; jmp *-8(%rsp)
 *
 * With `all`, every register but the return value's is as the original
 * left it (a caller built with -fipa-ra may rely on registers its callee
 * is known not to touch). */
static const enum reg return_saved[] = { R11, R10, R9, R8, RCX, RSI, RDI };
#define RETURN_SAVED (sizeof return_saved / sizeof *return_saved)
#define RETURN_XMM_AREA (14 * 16 + 8)   /* xmm2-15, and 8 to keep the alignment */

static uintptr_t emit_return_stub(struct emitter *e, struct stub_frames *f, bool all)
{
    f->start = emit_here(e);
    emit_frame_begin(e, 0);
    emit_nop(e);
    uintptr_t entry = emit_here(e);
    emit_push_imm(e, 0);
    enter_aligned_frame(e);
    if (all) {
        for (size_t i = 0; i < RETURN_SAVED; i++)
            emit_push(e, return_saved[i]);
        emit_sub_imm(e, RSP, RETURN_XMM_AREA);
        for (int x = 2; x < 16; x++)
            emit_movdqu_store(e, MEM(RSP, 16 * (x - 2)), (enum xmm)x);
    }
    emit_push(e, RAX);
    emit_push(e, RDX);
    emit_sub_imm(e, RSP, 32);
    emit_movdqu_store(e, MEM(RSP, 0), XMM0);
    emit_movdqu_store(e, MEM(RSP, 16), XMM1);
    emit_mov(e, RDI, RSP);
    emit_lea(e, RSI, MEM(RBP, 16));   /* the CFA: just above the return address's slot */
    emit_mov_imm64(e, R11, (uint64_t)(uintptr_t)leave_full);
    emit_call_reg(e, R11);
    emit_movdqu_load(e, XMM0, MEM(RSP, 0));
    emit_movdqu_load(e, XMM1, MEM(RSP, 16));
    emit_add_imm(e, RSP, 32);
    emit_pop(e, RDX);
    emit_pop(e, RAX);
    if (all) {
        for (int x = 2; x < 16; x++)
            emit_movdqu_load(e, (enum xmm)x, MEM(RSP, 16 * (x - 2)));
        emit_add_imm(e, RSP, RETURN_XMM_AREA);
        for (size_t i = RETURN_SAVED; i-- > 0;)
            emit_pop(e, return_saved[i]);
    }
    leave_aligned_frame(e);
    /* Through the slot, which holds the return address again: an indirect
     * jump, which the processor predicts (a ret here would not match its
     * return stack, 28 cycles more), and no register to spend. The slot is
     * below the stack pointer then, in the red zone, which signal delivery
     * leaves alone. */
    emit_add_imm(e, RSP, 8);
    emit_jmp_mem(e, MEM(RSP, -8));
    stub_frames_from_books(f, e, JIT_RA_SLOT_OR_SHADOW);
    return entry;
}
_Static_assert(offsetof(struct intercept_return, rdx) == 32 && offsetof(struct intercept_return, rax) == 40,
               "the return stub's pushes lay out struct intercept_return");

/* With `all`, the entry stub also keeps r10, r11 and xmm8-15, below the
 * registers the handler sees. */
#define ENTRY_EXTRA (2 * 8 + 8 * 16)

static struct mem xmm_slot(int32_t base, int i)
{
    return MEM(RSP, base + (int32_t)(offsetof(struct intercept_regs, xmm) + 16 * (size_t)i));
}

/* Emit the stub, which goes on to the function in *original; with a fixed
 * `target` (and `all`), through a slot in the stub itself, so that no
 * register is touched on the way. With `full`, the handler called is
 * enter_full(full, regs, &return address) instead of pre(id, regs). */
static void emit_entry_stub(struct emitter *e, uint32_t id, intercept_pre_fn *pre, const struct full_hook *full,
                            void **original, uintptr_t target, bool all, struct stub_frames *f)
{
    const int32_t base = all ? ENTRY_EXTRA : 0;   /* where struct intercept_regs starts */
    f->start = emit_here(e);
    emit_frame_begin(e, 8);
    enter_aligned_frame(e);
    emit_sub_imm(e, RSP, FRAME + base);
    if (all) {
        emit_mov_store(e, MEM(RSP, 0), R10);
        emit_mov_store(e, MEM(RSP, 8), R11);
        for (int x = 8; x < 16; x++)
            emit_movdqu_store(e, MEM(RSP, 16 + 16 * (x - 8)), (enum xmm)x);
    }
    for (size_t i = 0; i < SAVED_REGS; i++)
        emit_mov_store(e, MEM(RSP, base + (int32_t)saved_regs[i].offset), saved_regs[i].reg);
    for (int i = 0; i < 8; i++)
        emit_movdqu_store(e, xmm_slot(base, i), (enum xmm)i);
    emit_lea(e, R11, MEM(RBP, 8));   /* the return address's slot, for intercept_caller */
    emit_mov_store(e, MEM(RSP, base + (int32_t)offsetof(struct intercept_regs, caller_slot)), R11);
    if (full) {
        emit_mov_imm64(e, RDI, (uint64_t)(uintptr_t)full);
        emit_lea(e, RSI, MEM(RSP, base));
        emit_lea(e, RDX, MEM(RBP, 8));   /* the return address */
        emit_mov_imm64(e, R11, (uint64_t)(uintptr_t)enter_full);
    } else {
        emit_mov_imm64(e, RDI, id);
        emit_lea(e, RSI, MEM(RSP, base));
        emit_mov_imm64(e, R11, (uint64_t)(uintptr_t)pre);
    }
    emit_call_reg(e, R11);
    for (int i = 0; i < 8; i++)
        emit_movdqu_load(e, (enum xmm)i, xmm_slot(base, i));
    for (size_t i = 0; i < SAVED_REGS; i++)
        emit_mov_load(e, saved_regs[i].reg, MEM(RSP, base + (int32_t)saved_regs[i].offset));
    if (all) {
        for (int x = 8; x < 16; x++)
            emit_movdqu_load(e, (enum xmm)x, MEM(RSP, 16 + 16 * (x - 8)));
        emit_mov_load(e, R10, MEM(RSP, 0));
        emit_mov_load(e, R11, MEM(RSP, 8));
    }
    leave_aligned_frame(e);
    if (target) {
        /* jmp *slot(%rip), the slot 8-aligned after it: written now, never
         * changed, so a page a debugger copied keeps it right. */
        emit_label slot = emit_new_label(e);
        emit_jmp_rip_label(e, slot);
        emit_align(e, 8);
        emit_bind(e, slot);
        emit_quad(e, target);
    } else {
        /* The original, through a slot outside the code (a page a debugger
         * set a breakpoint in is a private copy, which later writes through
         * the pool's writing view would not reach). r11 is scratch here. */
        emit_mov_imm64(e, R11, (uint64_t)(uintptr_t)original);
        emit_mov_load(e, R11, MEM(R11, 0));
        emit_jmp_reg(e, R11);
    }
    stub_frames_from_books(f, e, JIT_RA_AT_CFA);
}

/* Slots for the originals stubs jump to: plain memory, never freed. */
static void **new_original_slot(void)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    enum { PER_PAGE = 4096 / sizeof(void *) };
    static void **page;
    static size_t used;
    pthread_mutex_lock(&lock);
    if (!page || used == PER_PAGE) {
        page = pages_alloc(PER_PAGE * sizeof *page);
        used = 0;
    }
    void **slot = page ? &page[used++] : NULL;
    pthread_mutex_unlock(&lock);
    return slot;
}

int intercept_entry_stub(uint32_t id, const char *name, intercept_pre_fn *pre, uintptr_t near,
                         struct intercept_stub *out)
{
    enum { STUB_MAX = 320 };
    struct code_chunk chunk;
    int err = pool_reserve(near, STUB_MAX, &chunk);
    if (err)
        return err;
    void **original = new_original_slot();
    if (!original)
        return ENOMEM;
    struct emitter e;
    struct stub_frames f = { 0 };
    emit_init(&e, chunk.write, chunk.size, chunk.exec);
    emit_entry_stub(&e, id, pre, NULL, original, 0, false, &f);
    if (emit_finish(&e))
        return ENOMEM;   /* STUB_MAX is too small, or the books: a bug, caught by the tests */
    if ((err = pool_publish(&chunk, e.len)) != 0)
        return err;
    describe(&f, &chunk, emit_here(&e), JIT_STUB_ENTRY, "entry stub", name);
    *out = (struct intercept_stub){ chunk.exec, original, e.len, 0 };
    return 0;
}

/* A full stub; with a fixed `target`, one that keeps every register
 * (`all`) and jumps there through a slot of its own. */
static int make_full_stub(uint32_t id, const char *name, intercept_pre_fn *pre, intercept_post_fn *post,
                          uintptr_t target, uintptr_t near, struct intercept_stub *out)
{
    /* The chunk holds the hook's data (read by enter_full where the code
     * runs), then the return stub, then the entry stub. */
    bool all = target != 0;
    enum { DATA = (sizeof(struct full_hook) + 15) & ~15 };
    const size_t stub_max = DATA + (all ? 960 : 400);
    static pthread_once_t shadow_described = PTHREAD_ONCE_INIT;
    pthread_once(&shadow_described, describe_shadow_stacks);
    hook_unwinder();
    void **original = all ? NULL : new_original_slot();
    if (!all && !original)
        return ENOMEM;
    struct code_chunk chunk;
    int err = pool_reserve(near, stub_max, &chunk);
    if (err)
        return err;
    const struct full_hook *h = (const struct full_hook *)chunk.exec;
    struct emitter e;
    struct stub_frames return_ranges = { 0 }, entry_ranges = { 0 };
    emit_init(&e, chunk.write + DATA, chunk.size - DATA, chunk.exec + DATA);
    uintptr_t return_stub = emit_return_stub(&e, &return_ranges, all);
    uintptr_t return_end = emit_here(&e);
    emit_align(&e, 16);
    uintptr_t entry = emit_here(&e);
    *(struct full_hook *)chunk.write = (struct full_hook){ id, pre, post, return_stub };
    emit_entry_stub(&e, id, pre, h, original, target, all, &entry_ranges);
    if (emit_finish(&e))
        return ENOMEM;   /* stub_max is too small, or the books: a bug, caught by the tests */
    if ((err = pool_publish(&chunk, DATA + e.len)) != 0)
        return err;
    jit_hold();
    describe(&return_ranges, &chunk, return_end, JIT_STUB_RETURN, "return stub", name);
    describe(&entry_ranges, &chunk, emit_here(&e), JIT_STUB_FULL_ENTRY, "entry stub", name);
    jit_release();
    *out = (struct intercept_stub){ entry, original, emit_here(&e) - entry, return_stub };
    return 0;
}

int intercept_full_stub(uint32_t id, const char *name, intercept_pre_fn *pre, intercept_post_fn *post,
                        uintptr_t near, struct intercept_stub *out)
{
    return make_full_stub(id, name, pre, post, 0, near, out);
}

int intercept_keeping_stub(uint32_t id, const char *name, intercept_pre_fn *pre, intercept_post_fn *post,
                           uintptr_t target, uintptr_t near, struct intercept_stub *out)
{
    if (!target)
        return EINVAL;
    return make_full_stub(id, name, pre, post, target, near, out);
}
