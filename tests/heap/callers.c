/* One allocation site reached from two callers, for --frames: built with
 * -O2 -fomit-frame-pointer, so only the unwind tables can walk the stack. */
#include <stdlib.h>

void *volatile kept[16];
volatile int made;

static __attribute__((noipa)) void *make_block(void)
{
    void *p = malloc(24); /* LEAK:site */
    kept[made++] = p;
    return p;
}

static __attribute__((noipa)) void from_first(void)
{
    for (int i = 0; i < 3; i++)
        make_block(); /* LEAK:first */
    made += 0;        /* no tail call: this frame stays on the stack */
}

static __attribute__((noipa)) void from_second(void)
{
    for (int i = 0; i < 5; i++)
        make_block(); /* LEAK:second */
    made += 0;
}

int main(void)
{
    from_first();
    from_second();
    return 0;
}
