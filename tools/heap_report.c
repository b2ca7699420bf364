/* `memprof run --heap`: the runtime writes the live heap blocks by raw call
 * site (an address, and object+offset, with its callers when asked, and the
 * Ruby line running in a Ruby process); this
 * names each frame with the symbolizer after the program exits, and merges
 * the rows that name the same lines (several calls on one line, or one call
 * unrolled). Done here, not in the target: naming reads files and calls
 * malloc. */
#include "commands.h"
#include "grow.h"
#include "elf/symbolizer.h"
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_OBJECTS 64

struct opened { char path[PATH_MAX]; struct symbolizer *s; };

struct row {
    char *frames;   /* the site, then "\n" and each caller: the merge key */
    char *ruby;     /* "file:line" or NULL: also part of the key */
    unsigned thread;   /* with --by-thread: the allocating thread; also the key */
    uint64_t count, bytes, peak, allocs;
};

/* A "# thread N tid count bytes allocs name" line. */
struct thread_line {
    unsigned serial;
    long tid;
    uint64_t count, bytes, allocs;
    char name[32];
};
#define MAX_THREAD_LINES 4096

struct rows { struct row *rows; size_t count, cap; };

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

/* "function file:line (object)" for a return address given as
 * object+0xOFFSET (the call is the byte before it); "function+0xOFF" or the
 * bare offset when there is no line or no name. Appended to *text. */
static void name_frame(struct opened *cache, size_t *opened, uint64_t site, char *object, char **text)
{
    uint64_t offset;
    char *plus = strrchr(object, '+'), *frame = NULL;
    struct symbol_info info = { 0 };
    if (!plus || sscanf(plus + 1, "%" SCNx64, &offset) != 1 || offset == 0) {
        if (asprintf(&frame, "0x%" PRIx64 " (?)", site) < 0)
            frame = NULL;
    } else {
        *plus = '\0';
        struct symbolizer *s = symbolizer_for(cache, opened, object);
        if (s)
            symbolizer_lookup(s, offset - 1, &info);
        info.function = demangle(info.function);
        const char *base = strrchr(object, '/');
        base = base ? base + 1 : object;
        int rc;
        if (info.function && info.file)
            rc = asprintf(&frame, "%s %s:%u (%s)", info.function, info.file, info.line, base);
        else if (info.function)
            rc = asprintf(&frame, "%s+0x%" PRIx64 " (%s)", info.function, info.offset + 1, base);
        else
            rc = asprintf(&frame, "0x%" PRIx64 " (%s)", offset, base);
        if (rc < 0)
            frame = NULL;
    }
    char *joined = NULL;
    if (frame && asprintf(&joined, "%s%s%s", *text ? *text : "", *text ? "\n" : "", frame) >= 0) {
        free(*text);
        *text = joined;
    }
    free(frame);
}

static int by_frames(const void *a, const void *b)
{
    const struct row *x = a, *y = b;
    int c = strcmp(x->frames, y->frames);
    if (!c)
        c = strcmp(x->ruby ? x->ruby : "", y->ruby ? y->ruby : "");
    return c ? c : (x->thread > y->thread) - (x->thread < y->thread);
}

static int by_bytes(const void *a, const void *b)
{
    const struct row *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return by_frames(x, y);
}

static struct row *new_row(struct rows *r)
{
    struct row *rows = grow_array(r->rows, r->count, &r->cap, sizeof *rows, 64);
    if (!rows)
        return NULL;
    r->rows = rows;
    struct row *row = &r->rows[r->count++];
    memset(row, 0, sizeof *row);
    return row;
}

static bool row_matches(const struct row *r, const char *filter)
{
    return !filter || strstr(r->frames, filter) || (r->ruby && strstr(r->ruby, filter));
}

static const struct thread_line *thread_named(const struct thread_line *t, size_t n, unsigned serial)
{
    for (size_t i = 0; i < n; i++)
        if (t[i].serial == serial)
            return &t[i];
    return NULL;
}

int heap_report_symbolize(FILE *raw, FILE *out, pid_t pid, const struct heap_report_options *opt)
{
    static struct thread_line threads[MAX_THREAD_LINES];
    size_t thread_count = 0;
    struct opened cache[MAX_OBJECTS];
    size_t opened = 0;
    struct rows rows = { 0 };
    struct row *current = NULL;
    unsigned long blocks = 0, table_bytes = 0;
    char line[PATH_MAX + 512], object[PATH_MAX];
    /* Naming reads files: a large heap takes a while. Say so on a terminal. */
    bool progress = isatty(STDERR_FILENO) == 1;
    size_t named = 0;
    while (fgets(line, sizeof line, raw)) {
        uint64_t count, bytes, peak, allocs, total_bytes, site;
        unsigned long b, t;
        if (line[0] == '#') {
            if (strncmp(line, "# warning: ", 11) == 0)
                fprintf(out, "memprof: warning: %s", line + 11);
            if (sscanf(line, "# tables %lu %lu", &b, &t) == 2)
                blocks = b, table_bytes = t;
            struct thread_line *th = &threads[thread_count];
            if (thread_count < MAX_THREAD_LINES &&
                sscanf(line, "# thread %u %ld %" SCNu64 " %" SCNu64 " %" SCNu64 " %31[^\n]", &th->serial,
                       &th->tid, &th->count, &th->bytes, &th->allocs, th->name) == 6)
                thread_count++;
        } else if (strncmp(line, "  thread ", 9) == 0) {
            if (current)
                current->thread = (unsigned)strtoul(line + 9, NULL, 10);
        } else if (strncmp(line, "  ruby ", 7) == 0) {
            if (current && !current->ruby)
                current->ruby = strndup(line + 7, strcspn(line + 7, "\n"));
        } else if (strncmp(line, "  from ", 7) == 0) {
            if (current && sscanf(line + 7, "%" SCNx64 " %4095[^\n]", &site, object) == 2)
                name_frame(cache, &opened, site, object, &current->frames);
        } else if (sscanf(line, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNx64 " %4095[^\n]",
                          &count, &bytes, &peak, &allocs, &total_bytes, &site, object) == 7 &&
                   (current = new_row(&rows))) {
            *current = (struct row){ NULL, NULL, 0, count, bytes, peak, allocs };
            name_frame(cache, &opened, site, object, &current->frames);
            if (progress && ++named % 1000 == 0)
                fprintf(stderr, "\rmemprof: symbolizing: %zu sites", named);
        }
    }
    if (progress && named >= 1000)
        fprintf(stderr, "\rmemprof: symbolized %zu sites\n", named);
    /* Merge rows that name the same frames: sums (the peak's sum is an upper
 * bound: the parts may have peaked at different times). */
    size_t kept = 0;
    for (size_t i = 0; i < rows.count; i++)
        if (rows.rows[i].frames)
            rows.rows[kept++] = rows.rows[i];
        else
            free(rows.rows[i].ruby);
    rows.count = kept;
    /* --filter, on the names: before merging, the same text either way. */
    kept = 0;
    for (size_t i = 0; i < rows.count; i++) {
        if (row_matches(&rows.rows[i], opt->filter)) {
            rows.rows[kept++] = rows.rows[i];
        } else {
            free(rows.rows[i].frames);
            free(rows.rows[i].ruby);
        }
    }
    rows.count = kept;
    qsort(rows.rows, rows.count, sizeof *rows.rows, by_frames);
    kept = 0;
    for (size_t i = 0; i < rows.count; i++) {
        struct row *r = &rows.rows[i];
        if (kept && by_frames(&rows.rows[kept - 1], r) == 0) {
            struct row *into = &rows.rows[kept - 1];
            into->count += r->count;
            into->bytes += r->bytes;
            into->allocs += r->allocs;
            into->peak += r->peak;
            free(r->frames);
            free(r->ruby);
        } else {
            rows.rows[kept++] = *r;
        }
    }
    rows.count = kept;
    qsort(rows.rows, rows.count, sizeof *rows.rows, by_bytes);
    size_t shown = opt->top && opt->top < rows.count ? opt->top : rows.count;

    if (rows.count)
        fprintf(out, "== memprof: live C heap blocks %s pid %ld (count bytes peak_bytes allocs site) ==\n",
                opt->when ? opt->when : "at exit of", (long)pid);
    else
        fprintf(out, "memprof: no live C heap blocks recorded\n");
    for (size_t i = 0; i < rows.count; i++) {
        const struct row *r = &rows.rows[i];
        if (i >= shown) {
            free(r->frames);
            free(r->ruby);
            continue;
        }
        fprintf(out, "%7" PRIu64 " %10" PRIu64 " %10" PRIu64 " %8" PRIu64 " ", r->count, r->bytes, r->peak,
                r->allocs);
        for (const char *f = r->frames, *nl; f; f = nl ? nl + 1 : NULL) {
            nl = strchr(f, '\n');
            if (f != r->frames)
                fputs("                                             from ", out);
            fprintf(out, "%.*s\n", (int)(nl ? (size_t)(nl - f) : strlen(f)), f);
        }
        if (r->ruby)
            fprintf(out, "                                             ruby %s\n", r->ruby);
        if (r->thread) {
            const struct thread_line *t = thread_named(threads, thread_count, r->thread);
            if (t)
                fprintf(out, "                                             thread %u (tid %ld, %s)\n",
                        r->thread, t->tid, t->name);
            else
                fprintf(out, "                                             thread %u\n", r->thread);
        }
        free(r->frames);
        free(r->ruby);
    }
    if (shown < rows.count)
        fprintf(out, "memprof: %zu more rows not shown (--top %zu)\n", rows.count - shown, shown);
    if (thread_count > 1) {
        fprintf(out, "memprof: by thread (thread tid count bytes allocs name):\n");
        for (size_t i = 0; i < thread_count; i++)
            fprintf(out, "%7u %8ld %7" PRIu64 " %10" PRIu64 " %8" PRIu64 " %s\n", threads[i].serial,
                    threads[i].tid, threads[i].count, threads[i].bytes, threads[i].allocs, threads[i].name);
    }
    if (rows.count && blocks)
        fprintf(out, "memprof: %lu live blocks; memprof's tables take %lu bytes (%.1f per block)\n",
                blocks, table_bytes, (double)table_bytes / (double)blocks);
    free(rows.rows);
    for (size_t i = 0; i < opened; i++)
        symbolizer_close(cache[i].s);
    return ferror(out) ? -1 : 0;
}
