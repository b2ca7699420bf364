#include "sites.h"
#include <string.h>

uint32_t sites_intern(struct site_table *t, const char *file, uint32_t line, uint32_t caller)
{
    uint32_t f = strings_put_cstr(&t->files, file);
    if (f == SITE_NONE)
        return SITE_NONE;
    return intern_put(&t->frames, (uint64_t)f << 32 | line, caller);
}

const char *sites_file(const struct site_table *t, uint32_t site)
{
    return strings_at(&t->files, (uint32_t)(intern_get(&t->frames, site)->a >> 32));
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
        const char *fa = sites_file(t, a), *fb = sites_file(t, b);
        int c = fa == fb ? 0 : strcmp(fa, fb);   /* interned: one file, one pointer */
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
    return strings_bytes(&t->files) + intern_bytes(&t->frames);
}

void sites_free(struct site_table *t)
{
    strings_free(&t->files);
    intern_free(&t->frames);
    memset(t, 0, sizeof *t);
}
