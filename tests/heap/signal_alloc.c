/* Allocations made by a signal handler that may interrupt memprof's hooks
 * (heap-signals.test). A timer sends SIGALRM every 20 us while the program
 * allocates and frees at one site; the handler allocates and frees at
 * another, whenever the thread it interrupted is not inside the allocator
 * (tests/heap/safe_alloc.c, the process's malloc). Each site's figures, as
 * the program counts them, go to FILE (figures.h), then "signals N": the
 * handler's runs that allocated. Arguments: FILE [ROUNDS]. Exit status 3
 * when a handler was not called as set, or sigaction or signal answered
 * with another handler than the program set (memprof stands in front of
 * every handler: hook/signal_guard.c). */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/time.h>
#include "figures.h"

int safe_alloc_busy(void);

static struct figures main_site, handler_site;
static volatile long signals_allocating;

#define HANDLER_RING 64
static void *handler_ring[HANDLER_RING];
static size_t handler_ring_size[HANDLER_RING];
static unsigned handler_next;
static uint64_t handler_seed = 7;

static volatile int queued_value, queued_signo;

static void on_queued(int sig, siginfo_t *info, void *context)
{
    (void)context;
    queued_signo = sig == info->si_signo ? sig : -1;
    queued_value = info->si_value.sival_int;
}

static void on_usr2(int sig)
{
    (void)sig;
}

static void on_alarm(int sig)
{
    (void)sig;
    if (safe_alloc_busy())
        return;
    int saved_errno = errno;
    for (int k = 0; k < 16; k++) {
        handler_seed = handler_seed * 6364136223846793005ull + 1442695040888963407ull;
        size_t size = 16 + (size_t)(handler_seed >> 56);
        unsigned i = handler_next++ % HANDLER_RING;
        if (handler_ring[i]) {
            free(handler_ring[i]);
            figures_died(&handler_site, handler_ring_size[i]);
        }
        handler_ring[i] = malloc(size);   /* SITE:handler */
        handler_ring_size[i] = size;
        figures_born(&handler_site, size);
    }
    signals_allocating++;
    errno = saved_errno;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    long rounds = argc > 2 ? atol(argv[2]) : 4000000;
    struct sigaction act;
    memset(&act, 0, sizeof act);
    act.sa_handler = on_alarm;
    act.sa_flags = SA_RESTART;
    if (sigaction(SIGALRM, &act, NULL) != 0)
        return 1;
    /* What the program set is what it is told, whoever stands in front. */
    struct sigaction now;
    int wrong = sigaction(SIGALRM, NULL, &now) != 0 || now.sa_handler != on_alarm ||
                (now.sa_flags & (SA_SIGINFO | SA_RESTART)) != SA_RESTART;
    wrong |= signal(SIGUSR2, on_usr2) != SIG_DFL;
    wrong |= signal(SIGUSR2, SIG_IGN) != on_usr2;
    /* A three-argument handler gets its signal's information. */
    struct sigaction queued;
    memset(&queued, 0, sizeof queued);
    queued.sa_sigaction = on_queued;
    queued.sa_flags = SA_SIGINFO;
    sigaction(SIGUSR1, &queued, NULL);
    sigqueue(getpid(), SIGUSR1, (union sigval){ .sival_int = 42 });
    wrong |= queued_signo != SIGUSR1 || queued_value != 42;

    struct itimerval every = { { 0, 20 }, { 0, 20 } };
    setitimer(ITIMER_REAL, &every, NULL);
    enum { KEEP = 512 };
    static void *kept[KEEP];
    static size_t kept_size[KEEP];
    uint64_t seed = 12345;
    for (long i = 0; i < rounds; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        size_t size = 16 + (size_t)(seed >> 56);
        void *p = malloc(size);   /* SITE:main */
        figures_born(&main_site, size);
        if (i % 8 == 0) {
            unsigned k = (unsigned)(seed >> 20) % KEEP;
            if (kept[k]) {
                free(kept[k]);
                figures_died(&main_site, kept_size[k]);
            }
            kept[k] = p;
            kept_size[k] = size;
        } else {
            free(p);
            figures_died(&main_site, size);
        }
    }
    struct itimerval stop = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_REAL, &stop, NULL);
    signal(SIGALRM, SIG_IGN);
    FILE *out = fopen(argv[1], "w");
    if (!out)
        return 1;
    figures_write(out, "main", &main_site);
    figures_write(out, "handler", &handler_site);
    fprintf(out, "signals %ld\n", signals_allocating);
    if (fclose(out) != 0)
        return 1;
    return wrong ? 3 : 0;
}
