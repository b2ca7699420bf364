/* A heap grown in order, so that its regions' arrays in memprof's table
 * start logged (filled in order: store/block_table.h), then worked on in
 * each way that rebuilds one hashed: blocks freed unseen (libc's free
 * called directly) and made again at their address (a put where a block
 * is), more blocks grown after them (which pushes those out of their young
 * slots into the table), and a third of the first half freed (the
 * owner's look-ups).
 * Writes the program's own live count, bytes and allocations of its one
 * site to FILE, "logged count bytes allocs" (heap-totals.test). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#define GROWN 100000
static void *blocks[2 * GROWN];
static size_t sizes[2 * GROWN];
static long count, allocs;
static long long bytes;

__attribute__((noinline)) static void *make(size_t size)
{
    void *p = malloc(size); /* LOGGED:site */
    __asm__ volatile("" : : "r"(p) : "memory");   /* not a tail call: the site is here */
    count++;
    allocs++;
    bytes += (long long)size;
    return p;
}

static void grow(int from, int to)
{
    for (int i = from; i < to; i++)
        blocks[i] = make(sizes[i] = 16 + (size_t)(i % 48));
}

int main(int argc, char **argv)
{
    void (*unseen_free)(void *) = (void (*)(void *))dlsym(RTLD_NEXT, "free");
    if (argc < 2 || !unseen_free)
        return 2;
    grow(0, GROWN);
    /* libc's own free, not the program's: memprof does not see it. The
     * thread's cache hands the chunk back to the next malloc of its size. */
    for (int i = 0; i < GROWN; i += 97) {
        void *old = blocks[i];
        unseen_free(old);
        count--;
        bytes -= (long long)sizes[i];
        if ((blocks[i] = make(sizes[i])) != old)
            return 3;   /* not handed back: the check would not hold */
    }
    grow(GROWN, 2 * GROWN);
    /* The first half's regions only: the second's keep their blocks made
     * again to the report. */
    for (int i = 0; i < GROWN / 2; i += 3) {
        free(blocks[i]);
        count--;
        bytes -= (long long)sizes[i];
    }
    FILE *out = fopen(argv[1], "w");
    if (!out)
        return 1;
    fprintf(out, "logged %ld %lld %ld\n", count, bytes, allocs);
    return fclose(out) != 0;
}
