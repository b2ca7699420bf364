/* Reports before the end comes (MEMPROF_ON_SIGNAL=SIGSEGV,SIGABRT,...): a
 * process that crashes or is killed by one of these signals first writes the
 * reports it would have written at exit, from the signal handler (the report
 * path calls no malloc and waits on no lock), then the signal does what it
 * would have done without memprof: the handler that was there before runs,
 * or the default action (a core dump, say) happens. */
#include "runtime.h"
#include "report_signals.h"
#include "../util/pages.h"
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static struct sigaction before[REPORT_SIGNALS];
static bool installed[REPORT_SIGNALS];
static int reporting;   /* the first signal reports; one that comes meanwhile does not */

/* The index of signal `number` in report_signals, or REPORT_SIGNALS. */
static size_t index_of(int number)
{
    size_t i = 0;
    while (i < REPORT_SIGNALS && report_signals[i].number != number)
        i++;
    return i;
}

const char *signal_name(int number)
{
    size_t i = index_of(number);
    return i < REPORT_SIGNALS ? report_signals[i].name : "a signal";
}

static void on_signal(int number, siginfo_t *info, void *context)
{
    (void)context;
    size_t i = index_of(number);
    if (i == REPORT_SIGNALS)
        return;
    if (__atomic_exchange_n(&reporting, 1, __ATOMIC_ACQ_REL) == 0)
        exit_reports_at_signal(number);
    /* What would have happened: the handler that was there, or the default
     * action. A fault happens again when the handler returns, now to that
     * disposition; any other signal is raised again, and arrives once this
     * handler has returned (it is blocked meanwhile). */
    sigaction(number, &before[i], NULL);
    installed[i] = false;
    bool fault = (number == SIGSEGV || number == SIGBUS || number == SIGILL || number == SIGFPE) && info->si_code > 0;
    if (!fault)
        raise(number);
}

/* A stack for the handler in the thread that starts the runtime, if it has
 * none: a SIGSEGV from a stack overflow finds no room on its own stack. */
static void alternate_stack(void)
{
    enum { SIZE = 256 * 1024 };
    stack_t old;
    if (sigaltstack(NULL, &old) != 0 || !(old.ss_flags & SS_DISABLE))
        return;
    void *stack = pages_alloc(SIZE);
    if (stack)
        sigaltstack(&(stack_t){ .ss_sp = stack, .ss_size = SIZE }, NULL);
}

/* MEMPROF_ON_SIGNAL: signal names (SIGSEGV or SEGV) or numbers, separated
 * by commas. An unknown word gets one line on stderr; the others are kept. */
void signal_reports_init(void)
{
    const char *spec = env_get("MEMPROF_ON_SIGNAL");
    for (const char *at = spec; at && *at;) {
        const char *end = strchr(at, ',');
        size_t len = end ? (size_t)(end - at) : strlen(at);
        char word[16];
        if (len && len < sizeof word) {
            memcpy(word, at, len);
            word[len] = '\0';
            int i = report_signal_index(word);
            if (i < 0) {
                say("memprof: ignoring '", word, "' in MEMPROF_ON_SIGNAL: not a signal memprof reports at "
                    "(SIGSEGV, SIGABRT, SIGBUS, SIGILL, SIGFPE, SIGTERM, ...)", (char *)NULL);
            } else if (!installed[i]) {
                struct sigaction act;
                memset(&act, 0, sizeof act);
                act.sa_sigaction = on_signal;
                act.sa_flags = SA_SIGINFO | SA_ONSTACK;
                sigfillset(&act.sa_mask);   /* nothing else runs in the middle of the report */
                if (sigaction(report_signals[i].number, &act, &before[i]) == 0)
                    installed[i] = true;
                if (report_signals[i].number == SIGSEGV)
                    alternate_stack();
            }
        } else if (len) {
            say("memprof: ignoring a word too long in MEMPROF_ON_SIGNAL", (char *)NULL);
        }
        at = end ? end + 1 : NULL;
    }
}
