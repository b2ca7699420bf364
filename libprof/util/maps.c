#include "maps.h"
#include "pages.h"
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static uintptr_t parse_hex(const char **p)
{
    uintptr_t v = 0;
    for (;; (*p)++) {
        char c = **p;
        if (c >= '0' && c <= '9')
            v = v * 16 + (uintptr_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v = v * 16 + (uintptr_t)(c - 'a' + 10);
        else
            return v;
    }
}

static int add_range(struct maps *m, uintptr_t start, uintptr_t end, int prot)
{
    if (m->count > 0) {
        struct maps_range *last = &m->ranges[m->count - 1];
        if (last->end == start && last->prot == prot) {
            last->end = end;
            return 0;
        }
    }
    if ((m->count + 1) * sizeof *m->ranges > m->bytes) {
        size_t bytes = m->bytes ? m->bytes * 2 : 4096 * 4;
        /* The first 16 KiB (680 ranges) mapped at once: a map is read several
         * times as a process starts, a fault a page each time. */
        struct maps_range *r = m->ranges ? pages_resize(m->ranges, m->bytes, bytes) : pages_alloc_filled(bytes);
        if (!r)
            return ENOMEM;
        m->ranges = r;
        m->bytes = bytes;
    }
    m->ranges[m->count++] = (struct maps_range){ start, end, prot };
    return 0;
}

/* One line: "start-end rwxp offset dev inode path". */
static int parse_line(struct maps *m, const char *line)
{
    const char *p = line;
    uintptr_t start = parse_hex(&p);
    if (*p++ != '-')
        return EINVAL;
    uintptr_t end = parse_hex(&p);
    if (*p++ != ' ' || strlen(p) < 3)
        return EINVAL;
    int prot = (p[0] == 'r' ? PROT_READ : 0) | (p[1] == 'w' ? PROT_WRITE : 0) |
               (p[2] == 'x' ? PROT_EXEC : 0);
    return add_range(m, start, end, prot);
}

int maps_load(struct maps *m)
{
    *m = (struct maps){ 0 };
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    /* Lines parsed where they were read; one the buffer cannot hold (a path
     * near PATH_MAX) by its head, the only part parsed. Copying each byte to
     * a line buffer took 17 instructions a byte: a quarter of a preloaded
     * process's instructions. The buffer no larger than before: a report may
     * run on a signal handler's stack. */
    char buf[4096];
    size_t have = 0;
    bool skipping = false;   /* the rest of a line whose head was parsed */
    int err = 0;
    while (!err) {
        ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            err = errno;
            break;
        }
        if (n == 0)
            break;   /* a last line without its newline is not whole: left out */
        char *line = buf, *end = buf + have + (size_t)n, *nl;
        while (!err && (nl = memchr(line, '\n', (size_t)(end - line)))) {
            *nl = '\0';
            if (!skipping)
                err = parse_line(m, line);
            skipping = false;
            line = nl + 1;
        }
        have = (size_t)(end - line);
        if (skipping) {
            have = 0;
        } else if (have == sizeof buf - 1) {
            buf[have] = '\0';
            err = parse_line(m, buf);
            have = 0;
            skipping = true;
        } else {
            memmove(buf, line, have);
        }
    }
    close(fd);
    if (err)
        maps_release(m);
    return err;
}

void maps_release(struct maps *m)
{
    pages_free(m->ranges, m->bytes);
    *m = (struct maps){ 0 };
}

const struct maps_range *maps_find(const struct maps *m, uintptr_t addr)
{
    if (m->last < m->count && addr >= m->ranges[m->last].start && addr < m->ranges[m->last].end)
        return &m->ranges[m->last];
    size_t lo = 0, hi = m->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (addr < m->ranges[mid].start)
            hi = mid;
        else if (addr >= m->ranges[mid].end)
            lo = mid + 1;
        else {
            ((struct maps *)m)->last = mid;   /* the map is the caller's own, not const */
            return &m->ranges[mid];
        }
    }
    return NULL;
}

bool maps_readable_searched(const struct maps *m, uintptr_t addr, size_t len)
{
    const struct maps_range *r = maps_find(m, addr);
    return r && (r->prot & PROT_READ) && len <= r->end - addr;
}
