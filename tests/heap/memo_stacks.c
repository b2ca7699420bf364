/* One allocating function reached by four paths taken in turn: two at
 * different depths (malloc's hook entered with another stack pointer: each
 * entry keeps its own memo of the last walk) and two that enter it alike,
 * the same address and stack pointer, told apart only by the words above
 * (the memo must read them). Each path makes a known number of blocks
 * (heap-leaks.test reads them per stack with --frames 4). */
#include <stdlib.h>

void *volatile kept[4][3000];
volatile int calls;   /* counted after each call: no call is a tail call */

__attribute__((noipa)) void *leaf(int path, int i)
{
    return kept[path][i] = malloc(16 + 8 * (size_t)path); /* MEMO:leaf */
}

__attribute__((noipa)) void near_a(int i)
{
    leaf(0, i); /* MEMO:near_a */
    calls++;
}

__attribute__((noipa)) void near_b(int i)
{
    leaf(1, i); /* MEMO:near_b */
    calls++;
}

__attribute__((noipa)) void deeper(int path, int i)
{
    volatile char pad[48];   /* another frame size: another stack pointer below */
    pad[0] = (char)i;
    leaf(path, i); /* MEMO:deeper */
    calls++;
}

__attribute__((noipa)) void far_c(int i)
{
    deeper(2, i); /* MEMO:far_c */
    calls++;
}

__attribute__((noipa)) void far_d(int i)
{
    volatile char pad[208];
    pad[0] = (char)i;
    deeper(3, i); /* MEMO:far_d */
    calls++;
}

int main(void)
{
    /* 3000, 2000, 1000, 1500 blocks, the paths interleaved. */
    for (int i = 0; i < 3000; i++) {
        near_a(i);
        if (i % 3 != 2)
            near_b(i);
        if (i % 3 == 0)
            far_c(i);
        if (i % 2 == 0)
            far_d(i);
    }
    return 0;
}
