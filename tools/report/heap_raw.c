/* Reading the runtime's raw C heap report (heap_raw.h). */
#include "heap_raw.h"
#include "../grow.h"
#include <ctype.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void heap_raw_free_row(struct raw_row *row)
{
    for (size_t i = 0; i < row->raw_count; i++)
        free(row->raw[i].object);
    free(row->raw);
    free(row->ruby);
    row->raw = NULL;
    row->ruby = NULL;
    row->raw_count = row->raw_cap = 0;
}

void heap_raw_free(struct raw_report *r)
{
    for (size_t i = 0; i < r->count; i++)
        heap_raw_free_row(&r->rows[i]);
    free(r->rows);
    free(r->threads);
    free(r->warnings);
    *r = (struct raw_report){ 0 };
}

static bool add_raw(struct raw_row *r, uint64_t site, const char *object)
{
    struct raw_frame *raw = grow_array(r->raw, r->raw_count, &r->raw_cap, sizeof *raw, 4);
    char *copy = raw ? strdup(object) : NULL;
    if (!copy)
        return false;
    r->raw = raw;
    r->raw[r->raw_count++] = (struct raw_frame){ site, copy };
    return true;
}

static bool add_warning(struct raw_report *r, const char *text)
{
    size_t old = r->warnings ? strlen(r->warnings) : 0, n = strlen(text);
    char *more = realloc(r->warnings, old + n + 2);
    if (!more)
        return false;
    memcpy(more + old, text, n);
    if (!n || text[n - 1] != '\n')
        more[old + n++] = '\n';
    more[old + n] = '\0';
    r->warnings = more;
    return true;
}

/* A header line ("# ..."): what it says about the report. */
static bool read_header(struct raw_report *r, const char *line)
{
    unsigned long b, t;
    if (strncmp(line, "# warning: ", 11) == 0 && !add_warning(r, line + 11))
        return false;
    if (sscanf(line, "# tables %lu %lu", &b, &t) == 2)
        r->blocks = b, r->table_bytes = t;
    sscanf(line, "# frames %u", &r->frames);
    sscanf(line, "# sample %" SCNu64, &r->sample);
    sscanf(line, "# stacks %" SCNu64 " %" SCNu64, &r->stacks_walked, &r->stacks_remembered);
    long pid;
    if (!r->pid && sscanf(line, "# pid %ld", &pid) == 1)
        r->pid = pid;
    /* A snapshot at the heap's peak (MEMPROF_PEAK_REPORT, --at-peak). */
    uint64_t peak_ms;
    unsigned step;
    if (sscanf(line, "# peak %*u bytes in %*u blocks, %" SCNu64 " ms after the start (within %u%%", &peak_ms,
               &step) == 2)
        snprintf(r->when, sizeof r->when,
                 "at its peak (%" PRIu64 " ms after the start, within %u%% + 64 KiB a thread) of", peak_ms, step);
    /* Written from a signal handler (MEMPROF_ON_SIGNAL). */
    int signal_number;
    char signal[16];
    if (sscanf(line, "# signal %d %15s", &signal_number, signal) == 2)
        snprintf(r->when, sizeof r->when, "at %s (signal %d) of", signal, signal_number);
    if (sscanf(line, "# wrappers %1023[^\n]", r->wrappers) != 1 && strncmp(line, "# wrappers", 10) == 0)
        r->wrappers[0] = '\0';
    if (r->thread_count < MAX_RAW_THREADS && strncmp(line, "# thread ", 9) == 0) {
        if (r->thread_count == r->thread_cap) {
            size_t cap = r->thread_cap ? r->thread_cap * 2 : 64;
            struct raw_thread *grown = realloc(r->threads, cap * sizeof *grown);
            if (!grown)
                return false;
            r->threads = grown;
            r->thread_cap = cap;
        }
        struct raw_thread *th = &r->threads[r->thread_count];
        if (sscanf(line, "# thread %u %ld %" SCNu64 " %" SCNu64 " %" SCNu64 " %31[^\n]", &th->serial, &th->tid,
                   &th->count, &th->bytes, &th->allocs, th->name) == 6)
            r->thread_count++;
    }
    return true;
}

/* A number's digits at `p` (hex after an optional 0x when `hex`), as
 * strtoull reads them but with no sign and no spaces before: where they end
 * (p itself when there are none); the value saturates, as strtoull's. */
static const char *read_number(const char *p, bool hex, uint64_t *value)
{
    const char *digits = hex && p[0] == '0' && (p[1] == 'x' || p[1] == 'X') && isxdigit((unsigned char)p[2]) ? p + 2 : p;
    uint64_t v = 0, base = hex ? 16 : 10;
    bool over = false;
    const char *q = digits;
    for (;; q++) {
        unsigned d;
        if (*q >= '0' && *q <= '9')
            d = (unsigned)(*q - '0');
        else if (hex && *q >= 'a' && *q <= 'f')
            d = (unsigned)(*q - 'a' + 10);
        else if (hex && *q >= 'A' && *q <= 'F')
            d = (unsigned)(*q - 'A' + 10);
        else
            break;
        over |= v > (UINT64_MAX - d) / base;
        v = v * base + d;
    }
    *value = over ? UINT64_MAX : v;
    return q == digits ? p : q;
}

/* A row's figures in `line`: `n` numbers (the last in hex, the others
 * decimal), each after spaces, then the rest of the line (not empty) in
 * object[size]; false when the line is not that. sscanf read the same at
 * several times the cost, over thousands of rows. */
static bool read_figures(const char *line, uint64_t *v, int n, char *object, size_t size)
{
    const char *p = line;
    for (int i = 0; i < n; i++) {
        while (*p == ' ')
            p++;
        const char *end = read_number(p, i == n - 1, &v[i]);
        if (end == p || *end != ' ')
            return false;
        p = end;
    }
    while (*p == ' ')
        p++;
    size_t length = strcspn(p, "\n");
    if (length == 0)
        return false;
    if (length > size - 1)
        length = size - 1;
    memcpy(object, p, length);
    object[length] = '\0';
    return true;
}

int heap_raw_read(FILE *in, struct raw_report *r)
{
    *r = (struct raw_report){ .frames = 1 };
    struct raw_row *current = NULL;
    char line[PATH_MAX + 512], object[PATH_MAX];
    bool ok = true;
    while (ok && fgets(line, sizeof line, in)) {
        uint64_t figures[6];   /* count, bytes, peak, allocs, total bytes, site */
        if (line[0] == '#') {
            ok = read_header(r, line);
        } else if (strncmp(line, "  thread ", 9) == 0) {
            if (current)
                current->thread = (unsigned)strtoul(line + 9, NULL, 10);
        } else if (strncmp(line, "  ruby ", 7) == 0) {
            if (current && !current->ruby)
                ok = (current->ruby = strndup(line + 7, strcspn(line + 7, "\n"))) != NULL;
        } else if (strncmp(line, "  wrapped ", 10) == 0) {
            if (current)
                current->wrapped = (unsigned)strtoul(line + 10, NULL, 10);
        } else if (strncmp(line, "  from ", 7) == 0) {
            if (current && read_figures(line + 7, figures, 1, object, sizeof object))
                ok = add_raw(current, figures[0], object);
        } else if (read_figures(line, figures, 6, object, sizeof object)) {
            struct raw_row *rows = grow_array(r->rows, r->count, &r->cap, sizeof *rows, 64);
            if (!(ok = rows != NULL))
                break;
            r->rows = rows;
            current = &r->rows[r->count++];
            *current = (struct raw_row){ .count = figures[0], .bytes = figures[1], .peak = figures[2],
                                         .allocs = figures[3], .total_bytes = figures[4] };
            ok = add_raw(current, figures[5], object);
        }
    }
    if (!ok)
        heap_raw_free(r);
    return ok ? 0 : -1;
}
