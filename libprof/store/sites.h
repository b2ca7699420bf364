/* Allocation sites, interned: a site is (file, line) and is named by a small
 * integer, so a record stores 4 bytes instead of a path. File names are copied
 * in: the string a runtime hands out may move or die before the report. */
#ifndef MEMPROF_STORE_SITES_H
#define MEMPROF_STORE_SITES_H
#include <stddef.h>
#include <stdint.h>

#define SITE_NONE UINT32_MAX

struct site { uint32_t file; uint32_t line; };  /* file: offset into chars */

struct site_table {
    char *chars;             /* NUL-terminated file names, back to back */
    size_t chars_len, chars_bytes;
    uint32_t *file_index;    /* open-addressed set of (offset + 1) */
    size_t file_mask, file_count;
    struct site *sites;
    size_t site_count, site_bytes;
    uint32_t *site_index;    /* open-addressed set of (site id + 1) */
    size_t site_mask;
    struct { const char *ptr; uint32_t file; } recent[64]; /* by caller's pointer */
};

/* SITE_NONE when out of memory. */
uint32_t sites_intern(struct site_table *t, const char *file, uint32_t line);
const char *sites_file(const struct site_table *t, uint32_t site);
uint32_t sites_line(const struct site_table *t, uint32_t site);
void sites_free(struct site_table *t);
size_t sites_bytes(const struct site_table *t);
#endif
