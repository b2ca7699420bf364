/* The signals memprof can write its reports at (MEMPROF_ON_SIGNAL, `memprof
 * run --on-signal`): those that end a process by default, but SIGKILL
 * (which no handler sees) and SIGTRAP/SIGSYS (which a handler that returns
 * would swallow). Shared by the runtime and the CLI, which checks the words. */
#ifndef MEMPROF_RUNTIME_REPORT_SIGNALS_H
#define MEMPROF_RUNTIME_REPORT_SIGNALS_H
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static const struct report_signal {
    const char *name;
    int number;
} report_signals[] = {
    { "SIGSEGV", SIGSEGV }, { "SIGABRT", SIGABRT }, { "SIGBUS", SIGBUS },   { "SIGILL", SIGILL },
    { "SIGFPE", SIGFPE },   { "SIGTERM", SIGTERM }, { "SIGINT", SIGINT },   { "SIGQUIT", SIGQUIT },
    { "SIGHUP", SIGHUP },   { "SIGUSR1", SIGUSR1 }, { "SIGUSR2", SIGUSR2 }, { "SIGXCPU", SIGXCPU },
    { "SIGXFSZ", SIGXFSZ }, { "SIGPIPE", SIGPIPE }, { "SIGALRM", SIGALRM },
};
#define REPORT_SIGNALS (sizeof report_signals / sizeof *report_signals)

/* The index of `word` (SIGSEGV, SEGV or 11) in report_signals, or -1. */
static inline int report_signal_index(const char *word)
{
    for (size_t i = 0; i < REPORT_SIGNALS; i++) {
        char *end;
        long n = strtol(word, &end, 10);
        if (strcmp(word, report_signals[i].name) == 0 || strcmp(word, report_signals[i].name + 3) == 0 ||
            (*word && !*end && n == report_signals[i].number))
            return (int)i;
    }
    return -1;
}
#endif
