/* Trampoline pools (libprof/hook/pool.c): code placed within rel32 reach of
 * an address, never writable and executable at once, runnable at once,
 * reserved from 8 threads without overlap, and private to each process
 * after fork. TAP. */
#include "arch/x86_64/emit.h"
#include "hook/pool.h"
#include "../tap.h"
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* `movabs $value, %rax; ret` into a chunk; returns the function. */
static long (*make_constant(const struct code_chunk *c, long value))(void)
{
    struct emitter e;
    emit_init(&e, c->write, c->size, c->exec);
    emit_mov_imm64(&e, RAX, (uint64_t)value);
    emit_ret(&e);
    return e.error ? NULL : (long (*)(void))c->exec;
}

/* The protection letters of the mapping holding `addr`, from /proc. */
static bool prot_of(uintptr_t addr, char prot[5])
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    bool found = false;
    while (f && !found && fgets(line, sizeof line, f)) {
        unsigned long start, end;
        if (sscanf(line, "%lx-%lx %4s", &start, &end, prot) == 3 && addr >= start && addr < end)
            found = true;
    }
    if (f)
        fclose(f);
    return found;
}

static bool in_rel32_reach(uintptr_t from, uintptr_t to)
{
    int64_t d = (int64_t)(to - from);
    return d > INT32_MIN && d < INT32_MAX;
}

#define THREAD_CHUNKS 200
static struct code_chunk thread_chunks[8][THREAD_CHUNKS];

static void *reserve_many(void *arg)
{
    struct code_chunk *mine = thread_chunks[(uintptr_t)arg];
    for (int i = 0; i < THREAD_CHUNKS; i++)
        if (pool_reserve((uintptr_t)&reserve_many, 48, &mine[i]) != 0)
            mine[i].exec = 0;
    return NULL;
}

static int by_exec(const void *a, const void *b)
{
    uintptr_t x = ((const struct code_chunk *)a)->exec, y = ((const struct code_chunk *)b)->exec;
    return (x > y) - (x < y);
}

int main(void)
{
    uintptr_t near = (uintptr_t)&main;
    struct code_chunk c;
    ok(pool_reserve(near, 64, &c) == 0, "a chunk near main");
    ok(in_rel32_reach(near, c.exec) && in_rel32_reach(c.exec, near),
       "within rel32 reach of main both ways (%#lx, main at %#lx)", (unsigned long)c.exec, (unsigned long)near);
    ok((uintptr_t)c.write != c.exec, "written through another view than the one that runs");
    char prot[5] = "";
    ok(prot_of(c.exec, prot) && prot[0] == 'r' && prot[1] == '-' && prot[2] == 'x',
       "the running view is read+execute, not writable (%s)", prot);
    ok(prot_of((uintptr_t)c.write, prot) && prot[1] == 'w' && prot[2] == '-',
       "the writing view is writable, not executable (%s)", prot);
    long (*f)(void) = make_constant(&c, 42);
    ok(f && f() == 42, "emitted code runs at once: returns 42");

    struct code_chunk anywhere;
    ok(pool_reserve(0, 100, &anywhere) == 0 && anywhere.size == 112, "anywhere, rounded to 16 bytes");
    ok(pool_reserve(near, POOL_REGION_BYTES + 1, &anywhere) != 0, "more than a region is refused");
    ok(pool_reserve(near, 0, &anywhere) != 0, "nothing is refused");

    /* Far apart: a stack address and main are terabytes apart. */
    int local;
    struct code_chunk stack_near;
    ok(pool_reserve((uintptr_t)&local, 64, &stack_near) == 0 &&
       in_rel32_reach((uintptr_t)&local, stack_near.exec) && !in_rel32_reach(near, stack_near.exec),
       "near the stack, a region of its own out of main's reach");

    pthread_t t[8];
    for (uintptr_t i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, reserve_many, (void *)i);
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    struct code_chunk *all = &thread_chunks[0][0];
    size_t n = 8 * THREAD_CHUNKS, bad = 0;
    qsort(all, n, sizeof *all, by_exec);
    for (size_t i = 0; i < n; i++) {
        if (!all[i].exec || !in_rel32_reach(near, all[i].exec))
            bad++;
        else if (i > 0 && all[i - 1].exec + all[i - 1].size > all[i].exec)
            bad++;
    }
    ok(bad == 0, "8 threads x %d chunks: all in reach, none overlapping (%zu bad)", THREAD_CHUNKS, bad);
    ok(pool_regions() >= 3, "more than one region when one is full (%zu regions)", pool_regions());
    long sum = 0;
    for (size_t i = 0; i < n; i += 97) {
        long (*g)(void) = make_constant(&all[i], (long)i);
        sum += g ? g() - (long)i : 1000;
    }
    ok(sum == 0, "code in chunks from every thread runs");

    /* fork: the child writes over a chunk and adds one; the parent's stay. */
    int pipefd[2];
    ok(pipe(pipefd) == 0, "a pipe for the child's results");
    pid_t pid = fork();
    if (pid == 0) {
        make_constant(&c, 7);    /* the parent's chunk, in the child */
        struct code_chunk mine;
        long r = pool_reserve(near, 64, &mine) == 0 && make_constant(&mine, 9) ? ((long (*)(void))mine.exec)() : -1;
        long results[3] = { f(), r, (long)mine.exec };
        ssize_t w = write(pipefd[1], results, sizeof results);
        _exit(w == sizeof results ? 0 : 1);
    }
    long results[3] = { 0 };
    ssize_t got = read(pipefd[0], results, sizeof results);
    int status;
    waitpid(pid, &status, 0);
    ok(got == sizeof results && results[0] == 7 && results[1] == 9, "the child changes its copy and adds code");
    ok(f() == 42, "the parent's code is its own: still 42 after the child rewrote it");
    struct code_chunk next;
    long (*h)(void) = pool_reserve(near, 64, &next) == 0 ? make_constant(&next, 11) : NULL;
    ok(h && h() == 11 && (long)next.exec == results[2],
       "the parent's next chunk is where the child put its own, with the parent's code");
    return tap_done();
}
