/* Blocks freed unseen (libc's free called directly) and made again at once
 * at their address, three to one young slot of memprof's (store: blocks
 * 64 KiB apart share one): each new block of 64 bytes pushes out the one
 * 64 KiB before it (A); A is freed unseen and made again as B, which
 * pushes out the new block; that one is freed unseen and made again,
 * which pushes out B. A and B leave their slot one after the other, at one
 * address and with one number: the report must keep B, the later, whether
 * both wait in the leaving ring or not, and must not count A and B (or a
 * block and the one made again at its address while that is young) as two.
 * Writes the program's own figures of each site to FILE: "a count bytes
 * peak allocs" and "b ..." (figures.h; heap-totals.test).
 *
 * With a second argument, stops at the 1000th pattern and waits for a
 * core (core.test): "young" right after B is made (B young, A older with
 * its number: in the ring or the table), "left" after the pattern (A and B
 * left their slot, one after the other). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "figures.h"

#define BLOCKS 300000
#define BEHIND 1024   /* 64 KiB of 64-byte chunks */
static void *at[BLOCKS];
static char kind[BLOCKS];
static struct figures site[2];
static const size_t size_of[2] = { 56, 48 };

SITE_FUNCTION(make_a, 56) /* MADE_AGAIN:a */
SITE_FUNCTION(make_b, 48) /* MADE_AGAIN:b */

static void *make(int k)
{
    figures_born(&site[k], size_of[k]);
    return k ? make_b() : make_a();
}

static void gone(int k)
{
    figures_died(&site[k], size_of[k]);
}

int main(int argc, char **argv)
{
    void (*unseen_free)(void *) = unseen_free_function();
    FILE *out = argc < 2 || !unseen_free ? NULL : figures_open(argv[1]);
    if (!out)
        return 2;
    const char *stop = argc > 2 ? argv[2] : "";
    long patterns = 0;
    for (int i = 0; i < BLOCKS; i++) {
        at[i] = make(0), kind[i] = 0;
        if (i < BEHIND || (char *)at[i] - (char *)at[i - BEHIND] != 65536)
            continue;   /* not laid out 64 KiB apart: nothing shares the slot */
        int j = i - BEHIND;
        void *old = at[j];
        unseen_free(old), gone(kind[j]);
        if ((at[j] = make(1)) != old)   /* the thread's cache hands the chunk back */
            return 3;
        kind[j] = 1;
        if (patterns == 999 && strcmp(stop, "young") == 0)
            break;
        void *pushed = at[i];
        unseen_free(pushed), gone(0);
        if ((at[i] = make(0)) != pushed)
            return 3;
        if (++patterns == 1000 && strcmp(stop, "left") == 0)
            break;
    }
    figures_write(out, "a", &site[0]);
    figures_write(out, "b", &site[1]);
    fprintf(out, "patterns %ld\n", patterns);
    if (fclose(out) != 0)
        return 2;
    return *stop ? wait_for_core() : 0;
}
