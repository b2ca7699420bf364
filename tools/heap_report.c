/* `memprof run --heap`: the runtime writes the live heap blocks by raw call
 * site (an address, and object+offset); this names each site with the
 * symbolizer (function+offset, file:line) after the program exits. Done here,
 * not in the target: naming reads files and calls malloc. */
#include "commands.h"
#include "elf/symbolizer.h"
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OBJECTS 64

struct opened { char path[PATH_MAX]; struct symbolizer *s; };

static struct symbolizer *symbolizer_for(struct opened *cache, size_t *n, const char *path)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp(cache[i].path, path) == 0)
            return cache[i].s;
    if (*n == MAX_OBJECTS)
        return NULL;
    char err[PATH_MAX + 128];
    struct opened *o = &cache[(*n)++];
    snprintf(o->path, sizeof o->path, "%s", path);
    o->s = symbolizer_open(path, err, sizeof err);
    return o->s;
}

int heap_report_symbolize(FILE *raw, FILE *out, pid_t pid)
{
    struct opened cache[MAX_OBJECTS];
    size_t opened = 0;
    char line[PATH_MAX + 512];
    bool header = false;
    unsigned long blocks = 0, table_bytes = 0, ring_bytes = 0;
    while (fgets(line, sizeof line, raw)) {
        uint64_t count, bytes, peak, total_count, total_bytes, site, offset;
        char object[PATH_MAX];
        if (line[0] == '#') {
            if (strncmp(line, "# warning: ", 11) == 0)
                fprintf(out, "memprof: warning: %s", line + 11);
            unsigned long b, t, r;
            if (sscanf(line, "# tables %lu %lu %lu", &b, &t, &r) == 3)
                blocks = b, table_bytes = t, ring_bytes = r;
            continue;
        }
        if (sscanf(line, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNx64 " %4095[^\n]",
                   &count, &bytes, &peak, &total_count, &total_bytes, &site, object) != 7)
            continue;
        if (!header) {
            fprintf(out, "== memprof: live C heap blocks at exit of pid %ld (count bytes peak_bytes allocs site) ==\n",
                    (long)pid);
            header = true;
        }
        fprintf(out, "%7" PRIu64 " %10" PRIu64 " %10" PRIu64 " %8" PRIu64 " ", count, bytes, peak, total_count);
        char *plus = strrchr(object, '+');
        struct symbol_info info = { 0 };
        if (plus && sscanf(plus + 1, "%" SCNx64, &offset) == 1 && offset > 0) {
            *plus = '\0';
            struct symbolizer *s = symbolizer_for(cache, &opened, object);
            /* The site is a return address: name the call, one byte before. */
            if (s)
                symbolizer_lookup(s, offset - 1, &info);
            if (info.function)
                fprintf(out, "%s+0x%" PRIx64, info.function, info.offset + 1);
            else
                fprintf(out, "0x%" PRIx64, offset);
            if (info.file)
                fprintf(out, " %s:%u", info.file, info.line);
            const char *base = strrchr(object, '/');
            fprintf(out, " (%s)\n", base ? base + 1 : object);
        } else {
            fprintf(out, "0x%" PRIx64 " (?)\n", site);
        }
    }
    if (!header)
        fprintf(out, "memprof: no live C heap blocks recorded\n");
    else if (blocks)
        fprintf(out, "memprof: %lu live blocks; memprof's tables take %lu bytes (%.1f per block), "
                     "its per-thread event rings %lu KiB\n",
                blocks, table_bytes, (double)table_bytes / (double)blocks, ring_bytes / 1024);
    for (size_t i = 0; i < opened; i++)
        symbolizer_close(cache[i].s);
    return ferror(out) ? -1 : 0;
}
