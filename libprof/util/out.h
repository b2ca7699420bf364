/* Formatted output without stdio or malloc: reports are written from at-exit
 * handlers and from GDB calls into a process stopped anywhere, where the
 * allocator's lock may be held. */
#ifndef MEMPROF_UTIL_OUT_H
#define MEMPROF_UTIL_OUT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct out {
    char *buf;
    size_t len, cap;
    int fd;        /* >= 0: flush to this descriptor when full */
    bool grows;    /* memory mode: buffer grows with mremap and is kept */
    int error;     /* first errno seen; output stops after it */
};

/* Write through `storage` to `fd`; with fd < 0, fill `storage` only (ENOSPC when full). */
void out_init_fd(struct out *o, int fd, char *storage, size_t cap);
/* Accumulate in mmap'd memory (for callers that read the text back). */
void out_init_mem(struct out *o);
void out_release_mem(struct out *o);

void out_bytes(struct out *o, const char *p, size_t n);
void out_str(struct out *o, const char *s);
void out_char(struct out *o, char c);
void out_u64(struct out *o, uint64_t v);
void out_u64_width(struct out *o, uint64_t v, int width); /* right-aligned */
void out_hex(struct out *o, uint64_t v);                   /* 0x... */
/* Flush to the descriptor (fd mode) or NUL-terminate (memory mode).
 * Returns 0, or the errno of the first failure. */
int out_finish(struct out *o);

int u64_digits(uint64_t v);
#endif
