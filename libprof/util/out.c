#include "out.h"
#include "pages.h"
#include <errno.h>
#include <string.h>
#include <unistd.h>

#define OUT_MEM_CHUNK (64 * 1024)

void out_init_fd(struct out *o, int fd, char *storage, size_t cap)
{
    *o = (struct out){ .buf = storage, .cap = cap, .fd = fd };
}

void out_init_mem(struct out *o)
{
    *o = (struct out){ .fd = -1, .grows = true };
    o->buf = pages_alloc(OUT_MEM_CHUNK);
    if (o->buf)
        o->cap = OUT_MEM_CHUNK;
    else
        o->error = ENOMEM;
}

void out_release_mem(struct out *o)
{
    if (o->grows)
        pages_free(o->buf, o->cap);
    o->buf = NULL;
    o->cap = o->len = 0;
}

static void flush_fd(struct out *o)
{
    size_t done = 0;
    while (done < o->len && !o->error) {
        ssize_t n = write(o->fd, o->buf + done, o->len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            o->error = n < 0 ? errno : EIO;
        else
            done += (size_t)n;
    }
    o->len = 0;
}

/* Make room for n more bytes (plus a NUL in memory mode). */
static bool reserve(struct out *o, size_t n)
{
    if (o->error)
        return false;
    if (o->len + n + 1 <= o->cap)
        return true;
    if (o->fd >= 0) {
        flush_fd(o);
        return !o->error;
    }
    if (!o->grows) {
        o->error = ENOSPC;
        return false;
    }
    size_t cap = o->cap;
    while (o->len + n + 1 > cap)
        cap += cap < OUT_MEM_CHUNK ? OUT_MEM_CHUNK : cap;
    char *p = pages_resize(o->buf, o->cap, cap);
    if (!p) {
        o->error = ENOMEM;
        return false;
    }
    o->buf = p;
    o->cap = cap;
    return true;
}

void out_bytes(struct out *o, const char *p, size_t n)
{
    while (n > 0 && reserve(o, o->fd >= 0 ? 1 : n)) {
        size_t room = o->cap - o->len - 1;
        size_t k = n < room ? n : room;
        memcpy(o->buf + o->len, p, k);
        o->len += k;
        p += k;
        n -= k;
    }
}

void out_str(struct out *o, const char *s)
{
    out_bytes(o, s, strlen(s));
}

void out_char(struct out *o, char c)
{
    if (!o->error && o->len + 2 <= o->cap) {   /* room for it and the NUL: most calls */
        o->buf[o->len++] = c;
        return;
    }
    out_bytes(o, &c, 1);
}

int u64_digits(uint64_t v)
{
    int d = 1;
    while (v >= 10) {
        v /= 10;
        d++;
    }
    return d;
}

void out_u64_width(struct out *o, uint64_t v, int width)
{
    /* The padding and the digits built right-aligned in one buffer, one
     * write: a report's columns took a write per space before. */
    char tmp[64];
    for (; width > (int)sizeof tmp; width--)
        out_char(o, ' ');
    int i = sizeof tmp;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (i > (int)sizeof tmp - width)
        tmp[--i] = ' ';
    out_bytes(o, tmp + i, sizeof tmp - (size_t)i);
}

void out_u64(struct out *o, uint64_t v)
{
    out_u64_width(o, v, 0);
}

void out_hex(struct out *o, uint64_t v)
{
    char tmp[18];
    int i = sizeof tmp;
    do {
        tmp[--i] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    tmp[--i] = 'x';
    tmp[--i] = '0';
    out_bytes(o, tmp + i, sizeof tmp - (size_t)i);
}

int out_finish(struct out *o)
{
    if (o->fd >= 0)
        flush_fd(o);
    else if (o->buf && o->len < o->cap)
        o->buf[o->len] = '\0';
    return o->error;
}
