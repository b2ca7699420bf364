/* A function whose loop starts 2 bytes into its code (gcc -O2
 * -fno-align-loops): the jne back lands inside the 5 bytes a jmp at its
 * entry would take. memprof-hook --inline count free=p refuses it, saying
 * so, and patches nothing (inline-hook.test). */
#include <stdio.h>

struct node {
    struct node *next;
    long value;
};

__attribute__((noinline)) static long count(struct node *p)
{
    long n = 0;
    do {
        n++;
        p = p->next;
    } while (p);
    return n;
}

int main(void)
{
    static struct node nodes[3] = { { &nodes[1], 1 }, { &nodes[2], 2 }, { NULL, 3 } };
    struct node *volatile head = &nodes[0];
    printf("%ld\n", count(head));
    return 0;
}
