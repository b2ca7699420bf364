/* The fault guard (fault.h). Async-signal-safe: write(2) and sigaction only. */
#include "fault.h"
#include "../arch/cpu.h"
#include "out.h"
#include "own_code.h"
#include "reentry.h"
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

static const int guarded[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE };
#define GUARDED (sizeof guarded / sizeof *guarded)
static struct sigaction previous[GUARDED];

static const struct own_code *own;
/* A fault inside the guard itself goes straight to the default action. Per
 * thread, and cleared before the next handler runs: Ruby's leaves by a
 * longjmp on a stack overflow (SystemStackError), and the program goes on. */
static __thread int faulting __attribute__((tls_model("initial-exec")));
static int said;   /* the line is said once: a handler that faults again is not memprof */

static const char *signal_word(int sig)
{
    return sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGILL ? "SIGILL" : "SIGFPE";
}

static void say_fault(int sig, const siginfo_t *info, uintptr_t pc)
{
    struct out o;
    char line[256];
    out_init_fd(&o, STDERR_FILENO, line, sizeof line);
    out_str(&o, "memprof: ");
    out_str(&o, signal_word(sig));
    out_str(&o, " inside memprof (pc ");
    if (own_code_holds(own, pc)) {
        out_str(&o, "libmemprof.so+");
        out_hex(&o, pc - own->base);
    } else {
        out_hex(&o, pc);
    }
    out_str(&o, ", address ");
    out_hex(&o, (uintptr_t)info->si_addr);
    out_str(&o, "): a bug in memprof, please report this line; the program's own handler runs next\n");
    out_finish(&o);
}

static void on_fault(int sig, siginfo_t *info, void *context)
{
    size_t i = 0;
    while (i < GUARDED && guarded[i] != sig)
        i++;
    if (i == GUARDED || faulting) {
        signal(sig, SIG_DFL);
        return;
    }
    faulting = 1;
    uintptr_t pc = cpu_fault_pc(context);
    if ((own_code_holds(own, pc) || reentry_inside()) && !__atomic_exchange_n(&said, 1, __ATOMIC_ACQ_REL))
        say_fault(sig, info, pc);
    /* What would have happened without memprof. */
    struct sigaction *p = &previous[i];
    faulting = 0;
    if (p->sa_flags & SA_RESETHAND)
        signal(sig, SIG_DFL);
    if ((p->sa_flags & SA_SIGINFO) && p->sa_sigaction) {
        p->sa_sigaction(sig, info, context);
    } else if (!(p->sa_flags & SA_SIGINFO) && p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN) {
        p->sa_handler(sig);
    } else {
        /* The default: a fault happens again when this returns; a signal
         * sent by kill is sent again. */
        signal(sig, SIG_DFL);
        if (info->si_code <= 0)
            raise(sig);
    }
}

void fault_guard_install(void)
{
    own = own_code_find();
    for (size_t i = 0; i < GUARDED; i++) {
        struct sigaction now;
        if (sigaction(guarded[i], NULL, &now) != 0)
            continue;
        if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_fault)
            continue;
        struct sigaction act;
        memset(&act, 0, sizeof act);
        act.sa_sigaction = on_fault;
        /* As the handler it stands in front of: blocking the same signals,
         * deferring (or not) a signal that comes meanwhile. */
        act.sa_flags = (now.sa_flags & SA_NODEFER) | SA_SIGINFO | SA_ONSTACK;
        act.sa_mask = now.sa_mask;
        previous[i] = now;
        sigaction(guarded[i], &act, NULL);
    }
}
