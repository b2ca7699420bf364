/* Allocation sites, interned: a site is a stack of frames (file, line), the
 * innermost first, named by a small integer, so a record stores 4 bytes
 * instead of paths. A one-frame site is the common case; deeper sites share
 * their callers' frames (each frame is interned with its caller's id).
 * File names are copied in: the string a runtime hands out may move or die
 * before the report. */
#ifndef MEMPROF_STORE_SITES_H
#define MEMPROF_STORE_SITES_H
#include "intern.h"
#include "strings.h"
#include <stddef.h>
#include <stdint.h>

#define SITE_NONE INTERN_NONE

struct site_table {
    struct string_pool files;    /* the file names */
    struct intern_table frames;  /* (file offset << 32 | line, caller site) */
};

/* The site of a frame at file:line called from `caller` (SITE_NONE for the
 * outermost frame recorded). SITE_NONE when out of memory. */
uint32_t sites_intern(struct site_table *t, const char *file, uint32_t line, uint32_t caller);
const char *sites_file(const struct site_table *t, uint32_t site);
uint32_t sites_line(const struct site_table *t, uint32_t site);
uint32_t sites_caller(const struct site_table *t, uint32_t site); /* SITE_NONE at the end */
/* Order of two sites by file, line, then callers: for stable reports. */
int sites_compare(const struct site_table *t, uint32_t a, uint32_t b);
void sites_free(struct site_table *t);
size_t sites_bytes(const struct site_table *t);
#endif
