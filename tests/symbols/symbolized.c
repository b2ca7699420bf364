/* A small program with known functions and lines, for the symbolizer tests:
 * a static helper, an exported function, recursion and a loop. */
#include <stdlib.h>
#include <string.h>

struct node { struct node *next; char payload[24]; };

static __attribute__((noipa)) struct node *grow_list(struct node *head, int n)
{
    for (int i = 0; i < n; i++) {
        struct node *fresh = malloc(sizeof *fresh);
        memset(fresh->payload, i, sizeof fresh->payload);
        fresh->next = head;
        head = fresh;
    }
    return head;
}

__attribute__((noipa)) char *make_copy(const char *text, int depth)
{
    if (depth > 0)
        return make_copy(text, depth - 1);
    return strdup(text);
}

int main(int argc, char **argv)
{
    struct node *list = grow_list(NULL, argc * 10);
    char *copy = make_copy(argv[0], 3);
    return list && copy ? 0 : 1;
}
