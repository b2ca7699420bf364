/* A malloc a signal handler may call (tests/heap/signal_alloc.c): the
 * handler asks safe_alloc_busy() first and allocates only when the thread
 * it interrupted is not inside this allocator, so the handler can interrupt
 * memprof's hooks around it but never the allocator itself (glibc's malloc
 * is not async-signal-safe). A shared library, so that it is the process's
 * malloc and memprof's hooks call it as the real one. Size classes of 16
 * bytes up to 4 KiB with free lists, larger blocks never reused. */
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#define ARENA_BYTES ((size_t)1 << 32)
#define CLASSES 256
#define HEADER 16

static char *arena, *arena_end;
static char *bump;
static void *free_lists[CLASSES];
static atomic_flag lock = ATOMIC_FLAG_INIT;
static __thread volatile int busy;

int safe_alloc_busy(void)
{
    return busy;
}

static void enter(void)
{
    busy = 1;
    atomic_signal_fence(memory_order_seq_cst);
    while (atomic_flag_test_and_set_explicit(&lock, memory_order_acquire))
        ;
}

static void leave(void)
{
    atomic_flag_clear_explicit(&lock, memory_order_release);
    atomic_signal_fence(memory_order_seq_cst);
    busy = 0;
}

/* The block's usable bytes, in the header before it. */
static size_t *header_of(void *p)
{
    return (size_t *)((char *)p - HEADER);
}

static void *take(size_t size, size_t align)
{
    if (size > ARENA_BYTES / 2 || align > 4096)
        return NULL;
    size_t rounded = (size + 15) & ~(size_t)15;
    if (!rounded)
        rounded = 16;
    size_t cls = rounded / 16 - 1;
    void *p = NULL;
    enter();
    if (!arena) {
        arena = mmap(NULL, ARENA_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (arena == MAP_FAILED)
            arena = NULL;
        bump = arena;
        arena_end = arena ? arena + ARENA_BYTES : NULL;
    }
    if (arena && align <= 16 && cls < CLASSES && free_lists[cls]) {
        p = free_lists[cls];
        free_lists[cls] = *(void **)p;
    } else if (arena) {
        uintptr_t start = ((uintptr_t)bump + HEADER + align - 1) & ~(uintptr_t)(align - 1);
        if ((char *)start + rounded <= arena_end) {
            p = (void *)start;
            bump = (char *)start + rounded;
        }
    }
    if (p)
        *header_of(p) = rounded;
    leave();
    if (!p)
        errno = ENOMEM;
    return p;
}

void *malloc(size_t size)
{
    return take(size, 16);
}

void free(void *p)
{
    if (!p)
        return;
    size_t cls = *header_of(p) / 16 - 1;
    if (cls >= CLASSES)
        return;   /* large: never reused */
    enter();
    *(void **)p = free_lists[cls];
    free_lists[cls] = p;
    leave();
}

void *calloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = take(n * size, 16);
    if (p)
        memset(p, 0, n * size);
    return p;
}

size_t malloc_usable_size(void *p)
{
    return p ? *header_of(p) : 0;
}

void *realloc(void *old, size_t size)
{
    if (!old)
        return malloc(size);
    if (!size) {
        free(old);
        return NULL;
    }
    void *p = malloc(size);
    if (p) {
        size_t had = *header_of(old);
        memcpy(p, old, had < size ? had : size);
        free(old);
    }
    return p;
}

void *reallocarray(void *old, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(old, n * size);
}

void *memalign(size_t align, size_t size)
{
    return take(size, align < 16 ? 16 : align);
}

void *aligned_alloc(size_t align, size_t size)
{
    return memalign(align, size);
}

int posix_memalign(void **out, size_t align, size_t size)
{
    void *p = memalign(align, size);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

void *valloc(size_t size)
{
    return memalign(4096, size);
}

void *pvalloc(size_t size)
{
    return memalign(4096, (size + 4095) & ~(size_t)4095);
}
