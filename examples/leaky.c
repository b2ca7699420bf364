/* A small C program that leaks at known lines: the quick start's C example.
 *
 *   gcc -g -o leaky leaky.c && memprof run --heap -- ./leaky [ENTRIES]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry { char name[24]; struct entry *next; };

static struct entry *make_entry(int i)
{
    struct entry *e = malloc(sizeof *e);
    snprintf(e->name, sizeof e->name, "entry %d", i);
    e->next = NULL;
    return e;
}

int main(int argc, char **argv)
{
    int entries = argc > 1 ? atoi(argv[1]) : 1000;
    struct entry *list = NULL;
    for (int i = 0; i < entries; i++) {
        struct entry *e = make_entry(i);
        if (i % 10 == 0) {          /* one in ten is kept on the list... */
            e->next = list;
            list = e;
        }                           /* ...and the other nine are lost */
    }
    char *copy = strdup(list->name);
    printf("%s, and %s\n", list->name, copy);
    free(copy);
    return 0;
}
