/* Allocations made for the program by library functions and by its own
 * wrapper (tests/heap-wrappers.test): each WRAPPED: line is where the report
 * must charge a block, not libc's, GLib's or the wrapper's own line. */
#define _GNU_SOURCE
#include <glib.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *volatile sink[16];

/* The program's own allocation wrapper, as gdb's xmalloc: named with --wrapper. */
static __attribute__((noinline)) void *checked_alloc(size_t size)
{
    void *p = malloc(size);   /* WRAPPED:inside-wrapper */
    if (!p)
        abort();
    return p;
}

static __attribute__((noinline)) void make_all(const char *path)
{
    sink[0] = strdup("a string from strdup");             /* WRAPPED:strdup */
    if (asprintf((char **)&sink[1], "%s-%d", "asprintf", 42) < 0) /* WRAPPED:asprintf */
        abort();
    FILE *f = fopen(path, "r");
    size_t cap = 0;
    char *line = NULL;
    if (!f || getline(&line, &cap, f) < 0)                 /* WRAPPED:getline */
        abort();
    sink[2] = line;
    fclose(f);
    sink[3] = realpath(path, NULL);                        /* WRAPPED:realpath */
    sink[4] = g_strdup("a string from g_strdup");         /* WRAPPED:g_strdup */
    sink[5] = g_malloc(333);                               /* WRAPPED:g_malloc */
    sink[6] = g_strdup_printf("%s %d", "printf", 7);       /* WRAPPED:g_strdup_printf */
    sink[7] = checked_alloc(444);                          /* WRAPPED:checked_alloc */
}

/* A wrapper in a signal handler: the walk to its caller stops short of the
 * signal frame (with one frame, memprof's own unwinder alone). */
static void on_signal(int sig)
{
    (void)sig;
    sink[8] = strdup("strdup in a signal handler, 41 bytes....");  /* WRAPPED:signal */
}

int main(int argc, char **argv)
{
    (void)argc;
    make_all(argv[1]);
    struct sigaction sa = { .sa_handler = on_signal };
    sigaction(SIGUSR1, &sa, NULL);
    raise(SIGUSR1);
    puts("wrapped: done");
    return 0;
}
