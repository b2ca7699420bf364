/* The allocation functions the C heap tracer hooks, with their prototypes:
 * heap_hooks.c makes a hook of each; heap_wrappers.c never looks inside them (a
 * wrapper's call of one is where the wrapper ends). */
#ifndef MEMPROF_TRACE_HEAP_HOOKS_H
#define MEMPROF_TRACE_HEAP_HOOKS_H

/* X(name, return type, (parameters), (arguments)) */
#define HEAP_HOOKS(X)                                                                          \
    X(malloc, void *, (size_t size), (size))                                                   \
    X(calloc, void *, (size_t n, size_t size), (n, size))                                      \
    X(realloc, void *, (void *p, size_t size), (p, size))                                      \
    X(reallocarray, void *, (void *p, size_t n, size_t size), (p, n, size))                    \
    X(free, void, (void *p), (p))                                                              \
    X(posix_memalign, int, (void **out, size_t align, size_t size), (out, align, size))        \
    X(aligned_alloc, void *, (size_t align, size_t size), (align, size))                       \
    X(memalign, void *, (size_t align, size_t size), (align, size))                            \
    X(valloc, void *, (size_t size), (size))                                                   \
    X(pvalloc, void *, (size_t size), (size))

struct heap_thread;
/* The calling thread's record, NULL until its first recorded allocation. */
extern __thread struct heap_thread *heap_my_thread __attribute__((tls_model("initial-exec"), visibility("hidden")));
/* The calling thread's record, made if it has none (NULL: out of memory). */
struct heap_thread *heap_thread_record(void);
/* Every hook into every object's GOT (0), or out again. */
int heap_hooks_install(void);
void heap_hooks_remove(void);
#endif
