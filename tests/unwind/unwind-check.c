/* memprof's unwinder (libprof/unwind) against libunwind's unw_backtrace, the
 * one it stands in for, from many frames: recursion, a variable-length
 * array (a frame addressed from %rbp), a large frame, calls through
 * pointers, a library's callback (qsort), a signal handler, a thread. Built
 * at -O0, -O2 and -O2 -fomit-frame-pointer. Where memprof's answers, the
 * return addresses must be libunwind's, every one; where it cannot (a
 * signal frame), it must say so. With an argument, `stack` prints the
 * stack at each checkpoint for the test script to hold against GDB's. */
#include "../../libprof/unwind/backtrace.h"
#include "../tap.h"
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define MAX 64
static int (*libunwind_backtrace)(void **, int);
static struct unwind_cache cache;
static int print_stacks;
static int checkpoints_answered, checkpoints_refused;

/* Both unwinders from one frame; their first entries are the returns into
 * this function (from two calls), the rest must agree. */
__attribute__((noinline)) static void compare(const char *where, int expect_answer)
{
    void *mine[MAX], *theirs[MAX];
    int n = unwind_backtrace(&cache, 1, mine, MAX);
    int m = libunwind_backtrace(theirs, MAX);
    if (n < 0) {
        checkpoints_refused++;
        ok(!expect_answer, "%s: memprof's unwinder cannot say, libunwind answers (%d frames)", where, m);
        return;
    }
    checkpoints_answered++;
    int same = n == m && n > 2 && memcmp(mine + 1, theirs + 1, (size_t)(n - 1) * sizeof *mine) == 0;
    ok(same && expect_answer, "%s: %d frames, the same return addresses as libunwind's", where, n - 1);
    if (!same)
        for (int i = 0; i < (n > m ? n : m); i++)
            printf("#   %2d  %18p  %18p\n", i, i < n ? mine[i] : NULL, i < m ? theirs[i] : NULL);
    if (print_stacks) {
        printf("# stack %s:", where);
        for (int i = 1; i < n; i++)
            printf(" %p", mine[i]);
        printf("\n");
    }
}

/* A checkpoint GDB stops at (see unwind.test): memprof's stack is printed
 * from inside it, the frames above `compare` GDB's too. */
__attribute__((noinline)) void checkpoint(const char *where, int expect_answer)
{
    compare(where, expect_answer);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static int recurse(int depth)
{
    if (depth == 0) {
        checkpoint("recursion, 12 deep", 1);
        return 0;
    }
    return recurse(depth - 1) + 1;
}

__attribute__((noinline)) static int with_vla(int n)
{
    volatile char buffer[n];
    buffer[0] = 1;
    checkpoint("a variable-length array (frame from %rbp)", 1);
    return buffer[0];
}

__attribute__((noinline)) static int large_frame(void)
{
    volatile char buffer[200000];
    buffer[0] = 1;
    checkpoint("a 200 KB frame", 1);
    return buffer[0];
}

static int (*volatile indirect)(int);
__attribute__((noinline)) static int through_pointer(int x)
{
    checkpoint("a call through a pointer", 1);
    return x;
}

static int compare_ints(const void *a, const void *b)
{
    static int once;
    if (!once++)
        checkpoint("a callback from libc's qsort", 1);
    return *(const int *)a - *(const int *)b;
}

static void on_signal(int signo)
{
    (void)signo;
    checkpoint("a signal handler (a signal frame above it)", 0);
}

static void *thread_main(void *arg)
{
    (void)arg;
    checkpoint("a thread's start routine", 1);
    return NULL;
}

int main(int argc, char **argv)
{
    print_stacks = argc > 1 && strcmp(argv[1], "stack") == 0;
    void *lib = dlopen("libunwind.so.8", RTLD_NOW);
    *(void **)&libunwind_backtrace = lib ? dlsym(lib, "unw_backtrace") : NULL;
    if (!libunwind_backtrace) {
        printf("Bail out! libunwind.so.8 is needed to compare with\n");
        return 1;
    }
    checkpoint("main", 1);
    recurse(12);
    with_vla(argc + 100);
    large_frame();
    indirect = through_pointer;
    indirect(3);
    int numbers[] = { 3, 1, 2 };
    qsort(numbers, 3, sizeof *numbers, compare_ints);
    signal(SIGUSR1, on_signal);
    raise(SIGUSR1);
    pthread_t t;
    pthread_create(&t, NULL, thread_main, NULL);
    pthread_join(t, NULL);
    /* Each again: now from the cache. */
    recurse(12);
    with_vla(argc + 100);
    ok(checkpoints_answered == 9 && checkpoints_refused == 1,
       "memprof's unwinder answered %d checkpoints and left 1 (the signal frame) to libunwind",
       checkpoints_answered);
    return tap_done();
}
