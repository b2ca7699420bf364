/* Interned strings: each distinct string is copied once into one buffer of
 * NUL-terminated strings back to back and named by its offset there, so a
 * record names a path or a class in 4 bytes, and a reader of a core finds
 * every string in one place. mmap'd memory only; not locked: the owner
 * serializes. */
#ifndef MEMPROF_STORE_STRINGS_H
#define MEMPROF_STORE_STRINGS_H
#include <stddef.h>
#include <stdint.h>

#define STRING_NONE UINT32_MAX

struct string_pool {
    char *chars;             /* the strings, back to back */
    size_t len, bytes;
    uint32_t *index;         /* open-addressed set of (offset + 1) */
    size_t mask, count;
    struct { const char *ptr; uint32_t offset; } recent[64]; /* by the caller's pointer */
};

/* The offset of a copy of `s` (the first `n` bytes, which hold no NUL);
 * STRING_NONE when out of memory. */
uint32_t strings_put(struct string_pool *p, const char *s, size_t n);
/* The same for a NUL-terminated string, remembering the caller's pointer:
 * a runtime hands out the same pointer for the same path many times. */
uint32_t strings_put_cstr(struct string_pool *p, const char *s);
static inline const char *strings_at(const struct string_pool *p, uint32_t offset)
{
    return p->chars + offset;
}
size_t strings_bytes(const struct string_pool *p);
void strings_free(struct string_pool *p);
#endif
