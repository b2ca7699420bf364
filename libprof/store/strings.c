#include "strings.h"
#include "../util/pages.h"
#include <string.h>

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

/* Room in the set for one more (at most half full). */
static int reserve_index(struct string_pool *p)
{
    size_t cap = p->index ? p->mask + 1 : 0;
    if (p->index && (p->count + 1) * 2 <= cap)
        return 0;
    size_t ncap = cap ? cap * 2 : 1024;
    uint32_t *n = pages_alloc_filled(ncap * sizeof *n);   /* written all over: mapped at once */
    if (!n)
        return -1;
    for (size_t i = 0; i < cap; i++) {
        uint32_t v = p->index[i];
        if (!v)
            continue;
        const char *s = p->chars + v - 1;
        size_t j = (size_t)hash_bytes(s, strlen(s)) & (ncap - 1);
        while (n[j])
            j = (j + 1) & (ncap - 1);
        n[j] = v;
    }
    pages_free(p->index, cap * sizeof *p->index);
    p->index = n;
    p->mask = ncap - 1;
    return 0;
}

uint32_t strings_put(struct string_pool *p, const char *s, size_t n)
{
    if (reserve_index(p) != 0)
        return STRING_NONE;
    size_t i = (size_t)hash_bytes(s, n) & p->mask;
    for (; p->index[i]; i = (i + 1) & p->mask) {
        const char *have = p->chars + p->index[i] - 1;
        if (strncmp(have, s, n) == 0 && have[n] == '\0')
            return p->index[i] - 1;
    }
    if (p->len + n + 1 >= STRING_NONE || !pages_grow((void **)&p->chars, &p->bytes, p->len + n + 1, 4096))
        return STRING_NONE;
    memcpy(p->chars + p->len, s, n);
    p->chars[p->len + n] = '\0';
    p->index[i] = (uint32_t)p->len + 1;
    p->len += n + 1;
    p->count++;
    return p->index[i] - 1;
}

uint32_t strings_put_cstr(struct string_pool *p, const char *s)
{
    size_t slot = ((uintptr_t)s >> 3) % (sizeof p->recent / sizeof p->recent[0]);
    if (p->recent[slot].ptr == s && p->chars && strcmp(p->chars + p->recent[slot].offset, s) == 0)
        return p->recent[slot].offset;
    uint32_t offset = strings_put(p, s, strlen(s));
    if (offset != STRING_NONE)
        p->recent[slot].ptr = s, p->recent[slot].offset = offset;
    return offset;
}

size_t strings_bytes(const struct string_pool *p)
{
    return p->bytes + (p->index ? (p->mask + 1) * sizeof(uint32_t) : 0);
}

void strings_free(struct string_pool *p)
{
    pages_free(p->chars, p->bytes);
    if (p->index)
        pages_free(p->index, (p->mask + 1) * sizeof(uint32_t));
    memset(p, 0, sizeof *p);
}
