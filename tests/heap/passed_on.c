/* A free path whose parameter only an assert compiled out reads, inlined
 * into a recursive function that passes on its own argument after calls:
 * at -O1 GCC describes the parameter as %rdi's value at that function's
 * entry (DW_OP_entry_value). Four threads, each freeing through frames
 * nested 1 to 8 deep, so each recall must find its own frame's value among
 * the deeper frames' (entry_value.c). Prints the objects made and not
 * freed. */
#define NDEBUG
#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct obj { struct obj *next; long value; } obj;
static _Atomic long made, freed;
static volatile long work_done;

__attribute__((noinline)) static obj *newobj(long v)
{
    obj *o = malloc(sizeof *o);
    o->value = v;
    made++;
    return o;
}

__attribute__((noinline)) static void work(long v)
{
    work_done += v;
}

static inline void release(obj *p)
{
    assert(p != NULL);
    freed++;
}

/* The list from `o` on: every object but those at a multiple of 5 released,
 * the deeper ones first. */
__attribute__((noinline)) static void drop(obj *o, obj *next, long depth)
{
    work(depth);
    if (next)
        drop(next, next->next, depth + 1);
    work(depth);
    if (depth % 5)
        release(o);
}

static void *run(void *arg)
{
    (void)arg;
    for (int round = 0; round < 500; round++) {
        obj *list = NULL;
        for (int i = 0; i < 1 + round % 8; i++) {
            obj *o = newobj(i); /* SITE */
            o->next = list;
            list = o;
        }
        drop(list, list->next, 1);
    }
    return NULL;
}

int main(void)
{
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, run, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    printf("%ld live\n", made - freed);
    return 0;
}
