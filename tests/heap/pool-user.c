/* Uses the pool allocator (pool_alloc.c) between two stops for GDB: at the first,
 * memprof-hook names pool_alloc and pool_free; at the second the heap
 * report must show the pool's blocks by the lines that made them, and the
 * pool's own malloc blocks. For heap-custom.test. */
#include <signal.h>
#include <stddef.h>
#include <stdio.h>

struct pool;
struct pool *pool_create(size_t capacity);
void *pool_alloc(struct pool *p, size_t size);
void pool_free(struct pool *p, void *block);

int main(void)
{
    raise(SIGTRAP);   /* GDB: memprof-hook ... */
    struct pool *pool = pool_create(1 << 20);
    void *kept[100];
    for (int i = 0; i < 100; i++)
        kept[i] = pool_alloc(pool, 48);   /* ALLOC_LOOP */
    for (int i = 0; i < 40; i++)
        pool_free(pool, kept[i]);
    void *one = pool_alloc(pool, 1000);   /* ALLOC_ONE */
    raise(SIGTRAP);   /* GDB: memprof-info heap */
    printf("pool-user: done %p\n", one);
    return 0;
}
