/* Every figure memprof reports per call site, kept by the program itself as
 * it allocates (heap-totals.test compares the two): live count and bytes,
 * the most bytes live at once, and allocations made. The patterns cover
 * each way a block leaves memprof's tables: freed at once (young), freed
 * long after (pushed out of its young slot into the older table), freed
 * by another thread, and never freed; sites alternate, so a thread's
 * last site changes often. One block of each site stays live. Arguments: FILE for the figures, "SITE count
 * bytes peak allocs" a line; ROUNDS (default 20000); "stop": then say
 * "waiting" on stderr and wait for a core (core.test). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "figures.h"

static struct figures young_site, old_site, handed_site;

#define HANDED 4096
static void *handed[HANDED];
static void *volatile last_block;   /* used: GCC drops a malloc freed unused */
static size_t handed_size[HANDED];
static int handed_count;

static void *free_handed(void *arg)
{
    (void)arg;
    for (int i = 0; i < handed_count - 1; i++)   /* the last stays */
        free(handed[i]);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    long rounds = argc > 2 ? atol(argv[2]) : 20000;
    enum { KEEP = 1000 };
    static void *kept[KEEP];
    static size_t kept_size[KEEP];
    uint64_t seed = 12345;
    for (long i = 0; i < rounds; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        size_t size = 1 + (size_t)(seed >> 55);
        void *p = malloc(size);   /* SITE:young */
        figures_born(&young_site, size);
        last_block = p;
        if (i % 7 == 3) {
            /* kept for a while: many allocations later it is freed from the
             * older table, or stays to the end */
            int slot = (int)((seed >> 20) % KEEP);
            if (kept[slot]) {
                free(kept[slot]);
                figures_died(&old_site, kept_size[slot]);
            }
            size_t old_size = size * 2 + 8;
            kept[slot] = malloc(old_size);   /* SITE:old */
            kept_size[slot] = old_size;
            figures_born(&old_site, old_size);
        }
        if (i % 13 == 5 && handed_count < HANDED) {
            size_t hs = 24 + (size_t)(i % 40);
            handed[handed_count] = malloc(hs);   /* SITE:handed */
            handed_size[handed_count++] = hs;
            figures_born(&handed_site, hs);
        }
        if (i < rounds - 1) {   /* the last stays: a report lists live sites */
            free(p);
            figures_died(&young_site, size);
        }
    }
    /* Freed by another thread: gone from the report, still in allocs. */
    pthread_t t;
    pthread_create(&t, NULL, free_handed, NULL);
    pthread_join(t, NULL);
    for (int i = 0; i < handed_count - 1; i++)
        figures_died(&handed_site, handed_size[i]);
    FILE *out = fopen(argv[1], "w");
    if (!out)
        return 1;
    const struct { const char *name; struct figures *f; } sites[] = {
        { "young", &young_site }, { "old", &old_site }, { "handed", &handed_site } };
    for (int i = 0; i < 3; i++)
        figures_write(out, sites[i].name, sites[i].f);
    if (fclose(out) != 0)
        return 1;
    return argc > 3 && strcmp(argv[3], "stop") == 0 ? wait_for_core() : 0;
}
