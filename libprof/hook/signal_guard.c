#include "signal_guard.h"
#include "got.h"
#include "../arch/cpu.h"
#include "../util/own_code.h"
#include "../util/reentry.h"
#include "../util/spinlock.h"
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The program's handler behind the trampoline, by signal: what sigaction
 * would have given the kernel. Kept after the guard is removed: a handler
 * memprof put in front of the trampoline (util/fault.c) may still call it. */
struct program_handler {
    uintptr_t handler;   /* sa_handler or sa_sigaction (one field in glibc) */
    int flags;           /* the program's sa_flags */
};
static struct program_handler programs[NSIG];
static const struct own_code *own;
/* Taken with every signal blocked: a handler that calls sigaction while
 * another call holds it in the same thread cannot run. */
static spinlock_t changing;

static int (*next_sigaction)(int, const struct sigaction *, struct sigaction *);
static sighandler_t (*next_signal)(int, sighandler_t);
static sighandler_t (*next_sysv_signal)(int, sighandler_t);
static sighandler_t (*next_bsd_signal)(int, sighandler_t);
static sighandler_t (*next_sigset)(int, sighandler_t);

static void trampoline(int sig, siginfo_t *info, void *context)
{
    uintptr_t handler = __atomic_load_n(&programs[sig].handler, __ATOMIC_ACQUIRE);
    if (handler == (uintptr_t)SIG_IGN)
        return;
    if (handler == (uintptr_t)SIG_DFL) {
        /* A sigaction that set the default raced this delivery: its action. */
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    bool guard = own_code_holds(own, cpu_fault_pc(context)) && !reentry_inside();
    if (guard)
        reentry_mark();
    /* Three arguments for either kind: the C ABIs memprof runs on let a
     * one-argument handler ignore the two others. */
    ((void (*)(int, siginfo_t *, void *))handler)(sig, info, context);
    if (guard)
        reentry_leave();
}

/* A handler of the program's: not a disposition, nor memprof's own. */
static bool guarded(uintptr_t handler)
{
    return handler != (uintptr_t)SIG_DFL && handler != (uintptr_t)SIG_IGN && handler != (uintptr_t)SIG_HOLD &&
           handler != (uintptr_t)SIG_ERR && !own_code_holds(own, handler);
}

static void lock(sigset_t *was)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, was);
    spin_lock(&changing);
}

static void unlock(const sigset_t *was)
{
    spin_unlock(&changing);
    pthread_sigmask(SIG_SETMASK, was, NULL);
}

/* `act`, the program's action for `sig`, made the trampoline's: the
 * program's handler kept for it first (the kernel may deliver at once). */
static void behind_trampoline(int sig, struct sigaction *act)
{
    __atomic_store_n(&programs[sig].flags, act->sa_flags, __ATOMIC_RELAXED);
    __atomic_store_n(&programs[sig].handler, (uintptr_t)act->sa_handler, __ATOMIC_RELEASE);
    act->sa_sigaction = trampoline;
    act->sa_flags |= SA_SIGINFO;
}

/* The kernel's action for `sig`, read back, put behind the trampoline. */
static void put_behind(int sig, struct sigaction *act)
{
    behind_trampoline(sig, act);
    sigaction(sig, act, NULL);
}

/* What the kernel answered, as the program set it. */
static void as_set(struct sigaction *old, struct program_handler was)
{
    if (old && (uintptr_t)old->sa_sigaction == (uintptr_t)trampoline) {
        old->sa_handler = (sighandler_t)was.handler;
        old->sa_flags = was.flags;
    }
}

static int guard_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (sig <= 0 || sig >= NSIG)
        return next_sigaction(sig, act, old);
    sigset_t was_mask;
    lock(&was_mask);
    struct program_handler was = programs[sig];
    struct sigaction behind;
    const struct sigaction *given = act;
    if (act && guarded((uintptr_t)act->sa_handler)) {
        behind = *act;
        behind_trampoline(sig, &behind);
        given = &behind;
    }
    int rc = next_sigaction(sig, given, old);
    if (rc != 0)
        programs[sig] = was;
    else
        as_set(old, was);
    unlock(&was_mask);
    return rc;
}

/* The signal() family: the real one sets the action its own way (flags,
 * mask), which is then read back and put behind the trampoline. */
static sighandler_t signal_like(sighandler_t (*real)(int, sighandler_t), int sig, sighandler_t handler)
{
    if (sig <= 0 || sig >= NSIG)
        return real(sig, handler);
    sigset_t was_mask;
    lock(&was_mask);
    struct program_handler was = programs[sig];
    sighandler_t old = real(sig, handler);
    struct sigaction now;
    if (old != SIG_ERR && guarded((uintptr_t)handler) && sigaction(sig, NULL, &now) == 0 && now.sa_handler == handler)
        put_behind(sig, &now);
    if ((uintptr_t)old == (uintptr_t)trampoline)
        old = (sighandler_t)was.handler;
    unlock(&was_mask);
    return old;
}

static sighandler_t guard_signal(int sig, sighandler_t handler)
{
    return signal_like(next_signal, sig, handler);
}

static sighandler_t guard_sysv_signal(int sig, sighandler_t handler)
{
    return signal_like(next_sysv_signal, sig, handler);
}

static sighandler_t guard_bsd_signal(int sig, sighandler_t handler)
{
    return signal_like(next_bsd_signal, sig, handler);
}

static sighandler_t guard_sigset(int sig, sighandler_t handler)
{
    return signal_like(next_sigset, sig, handler);
}

/* A strict C program's signal() is __sysv_signal (signal.h's redirect). */
static struct got_hook hooks[] = {
    { .symbol = "sigaction", .replacement = (void *)guard_sigaction, .next = (void **)&next_sigaction },
    { .symbol = "signal", .replacement = (void *)guard_signal, .next = (void **)&next_signal },
    { .symbol = "sysv_signal", .replacement = (void *)guard_sysv_signal, .next = (void **)&next_sysv_signal },
    { .symbol = "__sysv_signal", .replacement = (void *)guard_sysv_signal, .next = (void **)&next_sysv_signal },
    { .symbol = "bsd_signal", .replacement = (void *)guard_bsd_signal, .next = (void **)&next_bsd_signal },
    { .symbol = "sigset", .replacement = (void *)guard_sigset, .next = (void **)&next_sigset },
};
#define HOOK_COUNT (sizeof hooks / sizeof *hooks)

/* The signals that have a handler, bit sig - 1, as the kernel shows them
 * (SigCgt in /proc/self/status): one read rather than a sigaction for each
 * of 64 signals. Every signal when /proc cannot be read. */
static uint64_t signals_caught(void)
{
    char text[4096];
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, text, sizeof text - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return ~0ull;
    text[n] = '\0';
    const char *at = strstr(text, "\nSigCgt:\t");
    if (!at)
        return ~0ull;
    char *end;
    uint64_t mask = strtoull(at + 9, &end, 16);
    return end == at + 9 ? ~0ull : mask;
}

_Static_assert(NSIG <= 65, "SigCgt has a bit for each signal");

static bool caught(uint64_t mask, int sig)
{
    return mask >> (sig - 1) & 1;
}

int signal_guard_install(void)
{
    own = own_code_find();
    if (got_hooks_install(hooks, HOOK_COUNT) != 0)
        return -1;
    /* The handlers set before: most signals have none, and are not read. */
    uint64_t with_handler = signals_caught();
    for (int sig = 1; sig < NSIG; sig++) {
        struct sigaction now;
        if (!caught(with_handler, sig) || sigaction(sig, NULL, &now) != 0 || !guarded((uintptr_t)now.sa_handler))
            continue;
        sigset_t was_mask;
        lock(&was_mask);
        if (sigaction(sig, NULL, &now) == 0 && guarded((uintptr_t)now.sa_handler) &&
            (uintptr_t)now.sa_sigaction != (uintptr_t)trampoline)
            put_behind(sig, &now);
        unlock(&was_mask);
    }
    return 0;
}

void signal_guard_remove(void)
{
    got_hooks_remove(hooks, HOOK_COUNT);
    uint64_t with_handler = signals_caught();   /* the trampoline is a handler */
    for (int sig = 1; sig < NSIG; sig++) {
        struct sigaction now;
        if (!caught(with_handler, sig) || sigaction(sig, NULL, &now) != 0 ||
            (uintptr_t)now.sa_sigaction != (uintptr_t)trampoline)
            continue;
        sigset_t was_mask;
        lock(&was_mask);
        if (sigaction(sig, NULL, &now) == 0 && (uintptr_t)now.sa_sigaction == (uintptr_t)trampoline) {
            now.sa_handler = (sighandler_t)programs[sig].handler;
            now.sa_flags = programs[sig].flags;
            sigaction(sig, &now, NULL);
        }
        unlock(&was_mask);
    }
}
