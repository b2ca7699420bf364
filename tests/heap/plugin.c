/* A library the heap test loads with dlopen after memprof started. */
#include <stdlib.h>

void *volatile plugin_last;

void *plugin_leak(void)
{
    void *p = malloc(77); /* LEAK:plugin */
    plugin_last = p;      /* not a tail call: the site stays in this function */
    return p;
}
