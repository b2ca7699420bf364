#include "sites.h"
#include "../util/pages.h"
#include <string.h>

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

/* Room in the file-name set for one more (at most half full). */
static int reserve_file_index(struct site_table *t)
{
    size_t cap = t->file_index ? t->file_mask + 1 : 0;
    if (t->file_index && (t->file_count + 1) * 2 <= cap)
        return 0;
    size_t ncap = cap ? cap * 2 : 1024;
    uint32_t *n = pages_alloc(ncap * sizeof *n);
    if (!n)
        return -1;
    for (size_t i = 0; i < cap; i++) {
        uint32_t v = t->file_index[i];
        if (!v)
            continue;
        const char *s = t->chars + v - 1;
        size_t j = (size_t)hash_bytes(s, strlen(s)) & (ncap - 1);
        while (n[j])
            j = (j + 1) & (ncap - 1);
        n[j] = v;
    }
    pages_free(t->file_index, cap * sizeof *t->file_index);
    t->file_index = n;
    t->file_mask = ncap - 1;
    return 0;
}

static uint32_t intern_file(struct site_table *t, const char *file)
{
    size_t slot = ((uintptr_t)file >> 3) % (sizeof t->recent / sizeof t->recent[0]);
    if (t->recent[slot].ptr == file && t->chars &&
        strcmp(t->chars + t->recent[slot].file, file) == 0)
        return t->recent[slot].file;

    size_t n = strlen(file);
    uint64_t h = hash_bytes(file, n);
    if (reserve_file_index(t) != 0)
        return SITE_NONE;
    size_t i = (size_t)h & t->file_mask;
    for (; t->file_index[i]; i = (i + 1) & t->file_mask) {
        uint32_t off = t->file_index[i] - 1;
        if (strcmp(t->chars + off, file) == 0)
            goto found;
    }
    if (!pages_grow((void **)&t->chars, &t->chars_bytes, t->chars_len + n + 1, 65536))
        return SITE_NONE;
    memcpy(t->chars + t->chars_len, file, n + 1);
    t->file_index[i] = (uint32_t)t->chars_len + 1;
    t->chars_len += n + 1;
    t->file_count++;
found:
    t->recent[slot].ptr = file;
    t->recent[slot].file = t->file_index[i] - 1;
    return t->file_index[i] - 1;
}

uint32_t sites_intern(struct site_table *t, const char *file, uint32_t line, uint32_t caller)
{
    uint32_t f = intern_file(t, file);
    if (f == SITE_NONE)
        return SITE_NONE;
    return intern_put(&t->frames, (uint64_t)f << 32 | line, caller);
}

const char *sites_file(const struct site_table *t, uint32_t site)
{
    return t->chars + (intern_get(&t->frames, site)->a >> 32);
}

uint32_t sites_line(const struct site_table *t, uint32_t site)
{
    return (uint32_t)intern_get(&t->frames, site)->a;
}

uint32_t sites_caller(const struct site_table *t, uint32_t site)
{
    return (uint32_t)intern_get(&t->frames, site)->b;
}

int sites_compare(const struct site_table *t, uint32_t a, uint32_t b)
{
    while (a != b) {
        if (a == SITE_NONE || b == SITE_NONE)
            return a == SITE_NONE ? -1 : 1;
        int c = strcmp(sites_file(t, a), sites_file(t, b));
        if (c)
            return c;
        uint32_t la = sites_line(t, a), lb = sites_line(t, b);
        if (la != lb)
            return la < lb ? -1 : 1;
        a = sites_caller(t, a);
        b = sites_caller(t, b);
    }
    return 0;
}

size_t sites_bytes(const struct site_table *t)
{
    return t->chars_bytes + intern_bytes(&t->frames) +
           (t->file_index ? (t->file_mask + 1) * sizeof(uint32_t) : 0);
}

void sites_free(struct site_table *t)
{
    pages_free(t->chars, t->chars_bytes);
    if (t->file_index)
        pages_free(t->file_index, (t->file_mask + 1) * sizeof(uint32_t));
    intern_free(&t->frames);
    memset(t, 0, sizeof *t);
}
