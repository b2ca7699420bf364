/* A heap that grows past memprof's young slots, whose new blocks then go
 * straight to the older table (heap_hooks.c, record_direct), and leaves
 * that way when its blocks start to be freed:
 *   (a) 200,000 blocks kept, and one in 128 of them freed unseen (libc's
 *       free called directly) and made again at its address at once (b):
 *       the new block must replace the old one in the table; another one
 *       in 128 so right after it was made, while it may still wait in the
 *       ring (its region hashed by then): the new one must follow it;
 *   (c) 100,000 blocks each freed at once, and half of (a) freed: the
 *       young slots again;
 *   (d) 100,000 more kept: straight to the table again.
 * Writes the program's own figures of each site to FILE ("a count bytes
 * peak allocs", then b, c, d: figures.h) and "grown N", the blocks
 * of (a) and (d) (heap-totals.test). With a second argument "grown", stops
 * after (a) and (b) and waits for a core (core.test). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "figures.h"

#define GROWN 200000
#define CHURNED 100000
#define GROWN_AGAIN 100000
#define UNSEEN_EVERY 128
static void *kept[GROWN + GROWN_AGAIN];
static char kind[GROWN];
static struct figures site[4];
static const size_t size_of[4] = { 56, 48, 40, 24 };

SITE_FUNCTION(make_a, 56) /* DIRECT:a */
SITE_FUNCTION(make_b, 48) /* DIRECT:b */
SITE_FUNCTION(make_c, 40) /* DIRECT:c */
SITE_FUNCTION(make_d, 24) /* DIRECT:d */

static void *make(int k)
{
    static void *(*const makers[4])(void) = { make_a, make_b, make_c, make_d };
    figures_born(&site[k], size_of[k]);
    return makers[k]();
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
    int stop = argc > 2 && strcmp(argv[2], "grown") == 0;
    for (int i = 0; i < GROWN; i++) {
        kept[i] = make(0), kind[i] = 0;
        if (i % UNSEEN_EVERY == UNSEEN_EVERY / 4 || i % UNSEEN_EVERY == UNSEEN_EVERY - 1) {
            int j = i % UNSEEN_EVERY == UNSEEN_EVERY / 4 ? i : i - UNSEEN_EVERY / 2;
            void *old = kept[j];
            unseen_free(old), gone(kind[j]);
            if ((kept[j] = make(1)) != old)   /* the thread's cache hands the chunk back */
                return 3;
            kind[j] = 1;
        }
    }
    if (!stop) {
        for (int i = 0; i < CHURNED; i++) {
            free(make(2)), gone(2);
            if (i % 2 == 0 && i < GROWN)
                free(kept[i]), gone(kind[i]);
        }
        for (int i = 0; i < GROWN_AGAIN; i++)
            kept[GROWN + i] = make(3);
    }
    for (int k = 0; k < 4; k++)
        figures_write(out, (const char[]){ (char)('a' + k), '\0' }, &site[k]);
    fprintf(out, "grown %d\n", GROWN + (stop ? 0 : GROWN_AGAIN));
    if (fclose(out) != 0)
        return 2;
    return stop ? wait_for_core() : 0;
}
