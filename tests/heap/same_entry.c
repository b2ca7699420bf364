/* Two callers with the same frame size call the same allocating function at
 * the same depth: malloc's hook is entered at the same address with the same
 * stack pointer, and only the words above tell the stacks apart (a backtrace
 * reused from the previous allocation must check them). */
#include <stdlib.h>

void *volatile kept[2000];

__attribute__((noipa)) void *leaf(int i)
{
    return kept[i] = malloc(24); /* LEAK:leaf */
}

__attribute__((noipa)) void one(int i)
{
    leaf(i); /* CALL:one */
}

__attribute__((noipa)) void two(int i)
{
    leaf(i); /* CALL:two */
}

int main(void)
{
    for (int i = 0; i < 2000; i += 2) {
        one(i);
        two(i + 1);
    }
    return 0;
}
