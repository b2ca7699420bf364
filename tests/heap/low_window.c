/* Holds the window MAP_32BIT allocates from (0x40000000 to 2 GiB), so that
 * memprof's sampled filter and its jump table cannot go below 2 GiB: the
 * stubs at sampled call sites then cannot name them, and are not made. A
 * window already taken aborts: the test would prove nothing. */
#include <stdlib.h>
#include <sys/mman.h>

__attribute__((constructor)) static void hold_low_window(void)
{
    void *want = (void *)0x40000000;
    if (mmap(want, 0x40000000, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0) !=
        want)
        abort();
}
