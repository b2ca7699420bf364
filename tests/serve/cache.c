/* A cache that grows: an entry of 100 bytes kept about every millisecond,
 * until stdin ends; then the number kept on stdout. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *kept[1 << 20];

__attribute__((noinline)) static void *cache_put(size_t n)
{
    void *p = malloc(n); /* PUT */
    memset(p, 1, n);
    return p;
}

int main(void)
{
    int n = 0;
    printf("ready\n");
    fflush(stdout);
    struct pollfd in = { .fd = 0, .events = POLLIN };
    char c;
    while (n < (1 << 20) && !(poll(&in, 1, 1) == 1 && read(0, &c, 1) <= 0))
        kept[n++] = cache_put(100);
    printf("%d\n", n);
    return 0;
}
