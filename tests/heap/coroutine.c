/* Allocations on a coroutine's stack (ucontext), then on a smaller stack
 * mapped where the first was, entered so that malloc is called with the
 * same stack pointer: the words the first walk from that entry read lie
 * past the new stack's end, unmapped. A memo is checked from the entry
 * outwards, each word in a frame the words before proved live, so none of
 * those is read (heap-leaks.test: the program runs to its end, each block
 * charged to its stack). Prints whether the two calls had the same stack
 * pointer. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>

#define FIRST_SIZE (64 * 1024)
#define SHRINK (8 * 1024)

static ucontext_t main_context, co_context;
static void *volatile kept[2][100];
static uintptr_t frame_at[2];
static int run;
static size_t pad;

__attribute__((noipa)) static void allocate(void)
{
    frame_at[run] = (uintptr_t)__builtin_frame_address(0);
    for (int i = 0; i < 100; i++)
        kept[run][i] = malloc(48); /* CORO:allocate */
}

__attribute__((noipa)) static void padded(void)
{
    volatile char *room = __builtin_alloca(pad);
    room[0] = 1;
    allocate(); /* CORO:padded */
    room[1] = 2;
}

static void body(void)
{
    padded();
}

static void run_on(void *stack, size_t size)
{
    getcontext(&co_context);
    co_context.uc_stack.ss_sp = stack;
    co_context.uc_stack.ss_size = size;
    co_context.uc_link = &main_context;
    makecontext(&co_context, body, 0);
    swapcontext(&main_context, &co_context);
}

int main(void)
{
    char *stack = mmap(NULL, FIRST_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (stack == MAP_FAILED)
        return 1;
    pad = 24 * 1024;
    run = 0;
    run_on(stack, FIRST_SIZE);
    /* The stack given back, a smaller one in its place: its end SHRINK
     * lower, the allocating frame at the same address. */
    munmap(stack, FIRST_SIZE);
    char *again = mmap(stack, FIRST_SIZE - SHRINK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
                       -1, 0);
    if (again != stack)
        return 1;
    pad -= SHRINK;
    run = 1;
    run_on(again, FIRST_SIZE - SHRINK);
    printf("same stack pointer: %s\n", frame_at[0] == frame_at[1] ? "yes" : "no");
    return 0;
}
