/* Trampoline pools: see pool.h. A region is searched for in the gaps of
 * /proc/self/maps nearest `near`, then mapped there with MAP_FIXED_NOREPLACE
 * (which fails rather than replace a mapping made meanwhile).
 *
 * The view where code runs is a private mapping of the memfd: it shows what
 * the writing view wrote, except in a page a debugger wrote a breakpoint
 * into, which the kernel copies (a debugger cannot write into a shared
 * read-only mapping at all, so breakpoints in stubs would fail).
 * pool_publish brings new code into such a copy.
 *
 * fork: a MAP_SHARED memfd stays shared with the child, so code written by
 * one process would change the other's. The child gives each region a memfd
 * of its own, with the same contents, at the same addresses (only the
 * forking thread runs then, and it is not inside a stub). */
#include "pool.h"
#include "../util/maps.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* A rel32 spans ±2 GB from the end of its instruction: keep a margin. */
#define REACH ((uintptr_t)INT32_MAX - POOL_REGION_BYTES)
#define MAX_REGIONS 4096
/* Where user space ends on x86-64 (47-bit addresses), and the low addresses
 * mmap refuses (vm.mmap_min_addr is at most 64 KiB on Debian). */
#define USER_END ((uintptr_t)1 << 47)
#define USER_START ((uintptr_t)1 << 16)

struct region {
    uint8_t *write;
    uintptr_t exec;
    size_t used;
    uint64_t cookie;
};

static void after_fork_in_child(void);

static struct {
    pthread_mutex_t lock;
    pthread_once_t atfork;
    struct region regions[MAX_REGIONS];
    size_t count;
} pools = { .lock = PTHREAD_MUTEX_INITIALIZER, .atfork = PTHREAD_ONCE_INIT };

static void register_atfork(void)
{
    pthread_atfork(NULL, NULL, after_fork_in_child);
}

static bool in_reach(uintptr_t near, uintptr_t start, uintptr_t end)
{
    if (!near)
        return true;
    uintptr_t lo = near > REACH ? near - REACH : 0;
    uintptr_t hi = near + REACH;
    return start >= lo && end <= hi;
}

/* The free, region-aligned address nearest `near` whose region lies in
 * reach, or 0. */
static uintptr_t nearest_gap(const struct maps *m, uintptr_t near)
{
    uintptr_t best = 0, best_distance = UINTPTR_MAX;
    uintptr_t gap_start = USER_START;
    for (size_t i = 0; i <= m->count; i++) {
        uintptr_t gap_end = i < m->count ? m->ranges[i].start : USER_END;
        if (gap_end > gap_start && gap_end - gap_start >= POOL_REGION_BYTES) {
            /* The candidate inside [gap_start, gap_end) nearest `near`. */
            uintptr_t first = (gap_start + POOL_REGION_BYTES - 1) & ~(POOL_REGION_BYTES - 1);
            uintptr_t last = (gap_end - POOL_REGION_BYTES) & ~(POOL_REGION_BYTES - 1);
            if (first <= last) {
                uintptr_t at = near <= first ? first : near >= last ? last : near & ~(POOL_REGION_BYTES - 1);
                uintptr_t distance = at > near ? at - near : near - at;
                if (in_reach(near, at, at + POOL_REGION_BYTES) && distance < best_distance) {
                    best = at;
                    best_distance = distance;
                }
            }
        }
        if (i < m->count)
            gap_start = m->ranges[i].end;
    }
    return best;
}

static int new_memfd(void)
{
    int fd = memfd_create("memprof-code", MFD_CLOEXEC);
    if (fd >= 0 && ftruncate(fd, (off_t)POOL_REGION_BYTES) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* A new region near `near`: its memfd mapped executable at a free address in
 * reach and writable anywhere. */
static int map_region(uintptr_t near, struct region *out)
{
    pthread_once(&pools.atfork, register_atfork);
    int fd = new_memfd();
    if (fd < 0)
        return errno;
    int err = 0;
    void *exec = MAP_FAILED;
    for (int attempt = 0; !err && attempt < 8 && exec == MAP_FAILED; attempt++) {
        struct maps m;
        if ((err = maps_load(&m)) != 0)
            break;
        uintptr_t at = near ? nearest_gap(&m, near) : 0;
        maps_release(&m);
        if (near && !at) {
            err = ENOSPC;
            break;
        }
        exec = mmap((void *)at, POOL_REGION_BYTES, PROT_READ | PROT_EXEC,
                    MAP_PRIVATE | (at ? MAP_FIXED_NOREPLACE : 0), fd, 0);
        if (exec != MAP_FAILED && at && (uintptr_t)exec != at) {
            /* A kernel without MAP_FIXED_NOREPLACE took it as a hint. */
            munmap(exec, POOL_REGION_BYTES);
            exec = MAP_FAILED;
            err = ENOSPC;
        } else if (exec == MAP_FAILED && errno != EEXIST) {
            err = errno;   /* EEXIST: mapped meanwhile; look again */
        }
    }
    if (!err && exec == MAP_FAILED)
        err = ENOSPC;
    void *write = err ? MAP_FAILED : mmap(NULL, POOL_REGION_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (!err && write == MAP_FAILED) {
        err = errno;
        munmap(exec, POOL_REGION_BYTES);
    }
    close(fd);
    if (!err) {
        /* The cookie differs between regions and between runs. */
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        uint64_t cookie = ((uint64_t)(uintptr_t)exec ^ (uint64_t)getpid() << 32) * 0x9E3779B97F4A7C15ull ^
                          ((uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec);
        memcpy(write, POOL_REGION_MAGIC, 8);
        memcpy((uint8_t *)write + 8, &cookie, 8);
        *out = (struct region){ write, (uintptr_t)exec, POOL_REGION_HEADER, cookie };
    }
    return err;
}

int pool_publish(const struct code_chunk *c, size_t len)
{
    if (len > c->size)
        return EINVAL;
    if (memcmp((const void *)c->exec, c->write, len) == 0)
        return 0;
    /* A debugger's breakpoint made a private copy of a page this code is
     * in: write the new bytes into it the way the debugger did. */
    int fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return errno;
    ssize_t n = pwrite(fd, c->write, len, (off_t)c->exec);
    int err = n == (ssize_t)len ? 0 : n < 0 ? errno : EIO;
    close(fd);
    return err;
}

int pool_reserve(uintptr_t near, size_t size, struct code_chunk *out)
{
    size = (size + 15) & ~(size_t)15;
    if (size == 0 || size > POOL_REGION_BYTES - POOL_REGION_HEADER)
        return EINVAL;
    pthread_mutex_lock(&pools.lock);
    struct region *r = NULL;
    for (size_t i = 0; i < pools.count && !r; i++) {
        struct region *c = &pools.regions[i];
        uintptr_t start = c->exec + c->used;
        if (POOL_REGION_BYTES - c->used >= size && in_reach(near, start, start + size))
            r = c;
    }
    int err = 0;
    if (!r) {
        if (pools.count == MAX_REGIONS)
            err = ENOMEM;
        else if ((err = map_region(near, &pools.regions[pools.count])) == 0)
            r = &pools.regions[pools.count++];
    }
    if (r) {
        *out = (struct code_chunk){ r->write + r->used, r->exec + r->used, size, r->exec, r->cookie };
        r->used += size;
    }
    pthread_mutex_unlock(&pools.lock);
    return err;
}

size_t pool_regions(void)
{
    pthread_mutex_lock(&pools.lock);
    size_t n = pools.count;
    pthread_mutex_unlock(&pools.lock);
    return n;
}

static void after_fork_in_child(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    pools.lock = fresh;   /* a thread that held it is gone */
    for (size_t i = 0; i < pools.count; i++) {
        struct region *r = &pools.regions[i];
        /* The new memfd gets the code written so far, then replaces both
         * views at their addresses (one mmap each): chunks keep their
         * pointers, and the code stays in place. */
        int fd = new_memfd();
        /* The writing view first: if only it is replaced, the child can
         * no longer write into the parent's code. */
        bool ok = fd >= 0 && pwrite(fd, r->write, r->used, 0) == (ssize_t)r->used &&
                  mmap(r->write, POOL_REGION_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) !=
                      MAP_FAILED &&
                  mmap((void *)r->exec, POOL_REGION_BYTES, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED, fd, 0) !=
                      MAP_FAILED;
        if (!ok)
            r->used = POOL_REGION_BYTES;   /* add no code to a region in doubt */
        if (fd >= 0)
            close(fd);
    }
}
