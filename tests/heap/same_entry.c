/* Two callers with the same frame size call the same allocating function at
 * the same depth: malloc's hook is entered at the same address with the same
 * stack pointer, and only the words above tell the stacks apart (a backtrace
 * reused from the previous allocation must check them). */
#include <stdlib.h>
#include <string.h>

void *volatile kept[2000];
void *volatile copies[2000];

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

/* The same through strdup, a wrapper looked through to its caller. */
__attribute__((noipa)) void copy_one(int i)
{
    copies[i] = strdup("1"); /* COPY:one */
}

__attribute__((noipa)) void copy_two(int i)
{
    copies[i] = strdup("2"); /* COPY:two */
}

int main(void)
{
    for (int i = 0; i < 2000; i += 2) {
        one(i);
        two(i + 1);
        copy_one(i);
        copy_two(i + 1);
    }
    return 0;
}
