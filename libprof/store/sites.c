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

static uint64_t hash_site(uint32_t file, uint32_t line)
{
    return (((uint64_t)file << 32) | line) * 0x9E3779B97F4A7C15ull;
}

/* Grow an open-addressed set of (id + 1) to hold one more, rehashing with `rehash`. */
static int set_reserve(uint32_t **set, size_t *mask, size_t count,
                       uint64_t (*rehash)(const struct site_table *, uint32_t),
                       const struct site_table *t)
{
    size_t cap = *set ? *mask + 1 : 0;
    if (*set && (count + 1) * 2 <= cap)
        return 0;
    size_t ncap = cap ? cap * 2 : 1024;
    uint32_t *n = pages_alloc(ncap * sizeof *n);
    if (!n)
        return -1;
    for (size_t i = 0; i < cap; i++) {
        uint32_t v = (*set)[i];
        if (!v)
            continue;
        size_t j = (size_t)rehash(t, v - 1) & (ncap - 1);
        while (n[j])
            j = (j + 1) & (ncap - 1);
        n[j] = v;
    }
    pages_free(*set, cap * sizeof **set);
    *set = n;
    *mask = ncap - 1;
    return 0;
}

static uint64_t rehash_file(const struct site_table *t, uint32_t off)
{
    const char *s = t->chars + off;
    return hash_bytes(s, strlen(s));
}

static uint64_t rehash_site(const struct site_table *t, uint32_t id)
{
    return hash_site(t->sites[id].file, t->sites[id].line);
}

static uint32_t intern_file(struct site_table *t, const char *file)
{
    size_t slot = ((uintptr_t)file >> 3) % (sizeof t->recent / sizeof t->recent[0]);
    if (t->recent[slot].ptr == file && strcmp(t->chars + t->recent[slot].file, file) == 0)
        return t->recent[slot].file;

    size_t n = strlen(file);
    uint64_t h = hash_bytes(file, n);
    if (set_reserve(&t->file_index, &t->file_mask, t->file_count, rehash_file, t) != 0)
        return SITE_NONE;
    size_t i = (size_t)h & t->file_mask;
    for (; t->file_index[i]; i = (i + 1) & t->file_mask) {
        uint32_t off = t->file_index[i] - 1;
        if (strcmp(t->chars + off, file) == 0)
            goto found;
    }
    if (t->chars_len + n + 1 > t->chars_bytes) {
        size_t bytes = t->chars_bytes ? t->chars_bytes * 2 : 65536;
        while (t->chars_len + n + 1 > bytes)
            bytes *= 2;
        char *c = pages_resize(t->chars, t->chars_bytes, bytes);
        if (!c)
            return SITE_NONE;
        t->chars = c;
        t->chars_bytes = bytes;
    }
    memcpy(t->chars + t->chars_len, file, n + 1);
    t->file_index[i] = (uint32_t)t->chars_len + 1;
    t->chars_len += n + 1;
    t->file_count++;
found:
    t->recent[slot].ptr = file;
    t->recent[slot].file = t->file_index[i] - 1;
    return t->file_index[i] - 1;
}

uint32_t sites_intern(struct site_table *t, const char *file, uint32_t line)
{
    uint32_t f = intern_file(t, file);
    if (f == SITE_NONE)
        return SITE_NONE;
    if (set_reserve(&t->site_index, &t->site_mask, t->site_count, rehash_site, t) != 0)
        return SITE_NONE;
    size_t i = (size_t)hash_site(f, line) & t->site_mask;
    for (; t->site_index[i]; i = (i + 1) & t->site_mask) {
        const struct site *s = &t->sites[t->site_index[i] - 1];
        if (s->file == f && s->line == line)
            return t->site_index[i] - 1;
    }
    if ((t->site_count + 1) * sizeof *t->sites > t->site_bytes) {
        size_t bytes = t->site_bytes ? t->site_bytes * 2 : 65536;
        struct site *s = pages_resize(t->sites, t->site_bytes, bytes);
        if (!s)
            return SITE_NONE;
        t->sites = s;
        t->site_bytes = bytes;
    }
    uint32_t id = (uint32_t)t->site_count++;
    t->sites[id] = (struct site){ f, line };
    t->site_index[i] = id + 1;
    return id;
}

const char *sites_file(const struct site_table *t, uint32_t site)
{
    return t->chars + t->sites[site].file;
}

uint32_t sites_line(const struct site_table *t, uint32_t site)
{
    return t->sites[site].line;
}

size_t sites_bytes(const struct site_table *t)
{
    return t->chars_bytes + t->site_bytes +
           (t->file_index ? (t->file_mask + 1) * sizeof(uint32_t) : 0) +
           (t->site_index ? (t->site_mask + 1) * sizeof(uint32_t) : 0);
}

void sites_free(struct site_table *t)
{
    pages_free(t->chars, t->chars_bytes);
    pages_free(t->sites, t->site_bytes);
    if (t->file_index)
        pages_free(t->file_index, (t->file_mask + 1) * sizeof(uint32_t));
    if (t->site_index)
        pages_free(t->site_index, (t->site_mask + 1) * sizeof(uint32_t));
    memset(t, 0, sizeof *t);
}
