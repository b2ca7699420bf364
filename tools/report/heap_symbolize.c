/* `memprof run --heap`: the runtime writes the live heap blocks by raw call
 * site (an address, and object+offset, with its callers when asked or when
 * the site is in an allocation wrapper, and the Ruby line running in a Ruby
 * process); this names each frame with the symbolizer after the program
 * exits (with the functions inlined there), charges each row to the first
 * frame outside the allocation machinery, and merges the rows that name the
 * same lines (several calls on one line, or one call unrolled). Done here,
 * not in the target: naming reads files and calls malloc. */
#include "../commands.h"
#include "../cli.h"
#include "../grow.h"
#include "heap_raw.h"
#include "../input.h"
#include "objfile/symbolizer.h"
#include "objfile/sysroot.h"
#include "util/out.h"
#include "trace/heap/heap_wrapper_names.h"
#include <fnmatch.h>
#include <inttypes.h>
#include <limits.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_OBJECTS 64

struct opened { char path[PATH_MAX]; struct symbolizer *s; };

/* A named row: its frames' text and the figures of the raw rows it merges. */
struct row {
    char *frames;   /* the frames shown, "\n" before each caller and "\n\t"
                       before a function an inlined one is in: the merge key */
    char *ruby;     /* "file:line" or NULL: also part of the key */
    unsigned thread;   /* with --by-thread: the allocating thread; also the key */
    uint64_t count, bytes, peak, allocs;
};

struct rows { struct row *rows; size_t count, cap; };

/* `path`'s index among the objects opened, opened now when new; MAX_OBJECTS
 * when there is no room for it. */
static size_t object_index(struct opened *cache, size_t *n, const char *path)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp(cache[i].path, path) == 0)
            return i;
    if (*n == MAX_OBJECTS)
        return MAX_OBJECTS;
    char err[PATH_MAX + 128];
    struct opened *o = &cache[*n];
    snprintf(o->path, sizeof o->path, "%s", path);
    o->s = symbolizer_open(path, err, sizeof err);
    return (*n)++;
}

static struct symbolizer *symbolizer_for(struct opened *cache, size_t *n, const char *path)
{
    size_t i = object_index(cache, n, path);
    return i < MAX_OBJECTS ? cache[i].s : NULL;
}

/* One named frame: a function inlined at a return address, or the function
 * holding it. */
struct named {
    char *text;        /* "function file:line (object)" */
    bool inlined;      /* inlined into the next frame */
    bool machinery;    /* allocation machinery: not what a row is charged to */
};

struct naming {
    struct opened cache[MAX_OBJECTS];
    size_t opened;
    char wrappers[1024];   /* the run's --wrapper patterns, comma-separated */
    unsigned frames;       /* the frames the run asked for */
};

static const char *const builtin_wrappers[] = { HEAP_WRAPPER_NAMES };

static int compare_name(const void *key, const void *entry)
{
    return strcmp(key, *(const char *const *)entry);
}

static bool user_wrapper(const struct naming *n, const char *mangled, const char *plain)
{
    char pattern[256];
    for (const char *p = n->wrappers; *p;) {
        size_t len = strcspn(p, ",");
        snprintf(pattern, sizeof pattern, "%.*s", (int)len, p);
        const char *dot = strchr(mangled, '.');   /* a clone: name.constprop.0 */
        char base[256];
        snprintf(base, sizeof base, "%.*s", dot ? (int)(dot - mangled) : (int)strlen(mangled), mangled);
        if (len && (fnmatch(pattern, mangled, 0) == 0 || (dot && fnmatch(pattern, base, 0) == 0) ||
                    (plain && fnmatch(pattern, plain, 0) == 0)))
            return true;
        p += len + (p[len] == ',');
    }
    return false;
}

/* Library code that allocates for its caller: the known wrappers, the
 * user's, libstdc++, std:: code and anything from a system header. */
static bool is_machinery(const struct naming *n, const char *function, const char *file, const char *base)
{
    if (strncmp(base, "libstdc++.so", 12) == 0 || (file && strncmp(file, "/usr/include/", 13) == 0))
        return true;
    if (!function)
        return false;
    if (heap_wrapper_is_std(function) ||
        bsearch(function, builtin_wrappers, sizeof builtin_wrappers / sizeof *builtin_wrappers,
                sizeof *builtin_wrappers, compare_name))
        return true;
    return *n->wrappers && user_wrapper(n, function, demangle(function));
}

/* "FUNCTION FILE:LINE (OBJECT)", the common frame's text, joined by hand:
 * asprintf took half the naming of a report of thousands of rows. */
static char *frame_text(const char *function, const char *file, unsigned line, const char *object)
{
    char digits[12];
    struct out number;
    out_init_fd(&number, -1, digits, sizeof digits);
    out_u64(&number, line);
    size_t f = strlen(function), l = strlen(file), n = number.len, o = strlen(object);
    char *text = malloc(f + l + n + o + 6), *at = text;
    if (!text)
        return NULL;
    at = mempcpy(at, function, f);
    *at++ = ' ';
    at = mempcpy(at, file, l);
    *at++ = ':';
    at = mempcpy(at, digits, n);
    at = mempcpy(at, " (", 2);
    at = mempcpy(at, object, o);
    *at++ = ')';
    *at = '\0';
    return text;
}

/* A raw frame's object ("path+0xOFFSET") split into `object` and its
 * offset; false when it names none. */
static bool frame_object(const struct raw_frame *f, char object[PATH_MAX], uint64_t *offset)
{
    size_t object_length = strnlen(f->object, PATH_MAX - 1);
    memcpy(object, f->object, object_length);
    object[object_length] = '\0';
    char *plus = strrchr(object, '+'), *end = NULL;
    *offset = plus ? strtoull(plus + 1, &end, 16) : 0;
    if (!plus || end == plus + 1 || *offset == 0)
        return false;
    *plus = '\0';
    return true;
}

/* A frame of a row with blocks as the index of its object (among those
 * opened, with a symbolizer) and its call's address in it. */
static bool frame_call(struct naming *n, const struct raw_row *r, size_t j, size_t *object, uint64_t *call)
{
    char path[PATH_MAX];
    uint64_t offset;
    if (!r->count || !frame_object(&r->raw[j], path, &offset) ||
        (*object = object_index(n->cache, &n->opened, path)) == MAX_OBJECTS || !n->cache[*object].s)
        return false;
    *call = offset - 1;   /* a return address: its call's */
    return true;
}

/* Before any is named, each object's addresses among the rows, to its
 * symbolizer (symbolizer_expect): the furthest unit of its DWARF they need
 * decides how that is read. Grouped by object with a counting sort. */
static void expect_addresses(struct naming *n, const struct raw_report *report)
{
    size_t start[MAX_OBJECTS + 1] = { 0 }, object;
    uint64_t call;
    for (size_t i = 0; i < report->count; i++)
        for (size_t j = 0; j < report->rows[i].raw_count; j++)
            if (frame_call(n, &report->rows[i], j, &object, &call))
                start[object + 1]++;
    for (size_t o = 0; o < MAX_OBJECTS; o++)
        start[o + 1] += start[o];
    uint64_t *calls = start[MAX_OBJECTS] ? malloc(start[MAX_OBJECTS] * sizeof *calls) : NULL;
    if (!calls)
        return;
    size_t next[MAX_OBJECTS];
    memcpy(next, start, sizeof next);
    for (size_t i = 0; i < report->count; i++)
        for (size_t j = 0; j < report->rows[i].raw_count; j++)
            if (frame_call(n, &report->rows[i], j, &object, &call))
                calls[next[object]++] = call;
    for (size_t o = 0; o < n->opened; o++)
        if (start[o + 1] > start[o])
            symbolizer_expect(n->cache[o].s, calls + start[o], start[o + 1] - start[o]);
    free(calls);
}

/* The frames of one return address given as object+0xOFFSET (the call is
 * the byte before it), innermost first, appended to *out. */
static void name_address(struct naming *n, const struct raw_frame *f, struct named *out, size_t *count, size_t max)
{
    char object[PATH_MAX];
    uint64_t offset = 0;
    if (*count >= max)
        return;
    if (!frame_object(f, object, &offset)) {
        char *text = NULL;
        if (asprintf(&text, "0x%" PRIx64 " (?)", f->site) >= 0)
            out[(*count)++] = (struct named){ text, false, false };
        return;
    }
    struct symbolizer *s = symbolizer_for(n->cache, &n->opened, object);
    struct symbol_info info[SYMBOLIZER_MAX_INLINED];
    size_t frames = s ? symbolizer_frames(s, offset - 1, info, SYMBOLIZER_MAX_INLINED) : 0;
    if (!frames) {
        frames = 1;
        info[0] = (struct symbol_info){ 0 };
    }
    const char *base = strrchr(object, '/');
    base = base ? base + 1 : object;
    for (size_t i = 0; i < frames && *count < max; i++) {
        bool last = i + 1 == frames;
        bool machinery = is_machinery(n, info[i].function, info[i].file, base);
        const char *function = demangle(info[i].function);
        char *text = NULL;
        int rc;
        if (function && info[i].file)
            rc = (text = frame_text(function, info[i].file, info[i].line, base)) ? 0 : -1;
        else if (function && last)
            rc = asprintf(&text, "%s+0x%" PRIx64 " (%s)", function, info[i].offset + 1, base);
        else if (function)
            rc = asprintf(&text, "%s (%s)", function, base);
        else
            rc = asprintf(&text, "0x%" PRIx64 " (%s)", offset, base);
        if (rc < 0)
            continue;
        out[(*count)++] = (struct named){ text, !last, machinery };
    }
}

/* The row's text: every frame with --frames, else the frame it is charged
 * to (the first outside the allocation machinery, from the first the
 * runtime did not find in a wrapper) and the functions it is inlined in. */
static char *row_text(struct naming *n, const struct raw_row *r)
{
    enum { MAX_NAMED = 512 };
    static struct named named[MAX_NAMED];
    size_t count = 0, charged_address = r->wrapped < r->raw_count ? r->wrapped : r->raw_count - 1;
    size_t first_of_charged = 0;
    for (size_t i = 0; i < r->raw_count; i++) {
        if (i == charged_address)
            first_of_charged = count;
        name_address(n, &r->raw[i], named, &count, MAX_NAMED);
    }
    size_t charged = first_of_charged;
    while (charged + 1 < count && named[charged].machinery)
        charged++;
    size_t start = n->frames > 1 ? 0 : charged, end = count;
    if (n->frames <= 1)   /* the charged frame and the functions it is inlined in */
        for (end = charged; end < count && named[end].inlined; end++) {
        }
    if (n->frames <= 1 && end < count)
        end++;
    /* The frames shown joined, each after a newline (and a tab when the one
     * before is inlined into it): sized first, one allocation a row. */
    size_t length = 1;
    for (size_t i = start; i < end; i++)
        length += strlen(named[i].text) + 2;
    char *text = malloc(length), *at = text;
    for (size_t i = 0; i < count; i++) {
        if (text && i >= start && i < end) {
            if (i > start)
                at = stpcpy(at, named[i - 1].inlined ? "\n\t" : "\n");
            at = stpcpy(at, named[i].text);
        }
        free(named[i].text);
    }
    if (text)
        *at = '\0';
    return text;
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

static bool row_matches(const struct row *r, const char *filter)
{
    return !filter || strstr(r->frames, filter) || (r->ruby && strstr(r->ruby, filter));
}

/* By halves (the runtime writes them by serial), else one by one. */
static const struct raw_thread *thread_named(const struct raw_thread *t, size_t n, unsigned serial)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t[mid].serial == serial)
            return &t[mid];
        if (t[mid].serial < serial)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = 0; i < n; i++)
        if (t[i].serial == serial)
            return &t[i];
    return NULL;
}

static void row_free(struct row *r)
{
    free(r->frames);
    free(r->ruby);
}

/* Stage 1: each raw row with blocks named (the raw rows freed meanwhile).
 * Naming reads files: a large heap takes a while, said on a terminal. */
static void name_rows(struct naming *naming, struct raw_report *report, struct rows *rows)
{
    bool progress = isatty(STDERR_FILENO) == 1;
    size_t named = 0;
    expect_addresses(naming, report);
    for (size_t i = 0; i < report->count; i++) {
        struct raw_row *r = &report->rows[i];
        if (!r->count)   /* a site whose blocks are all freed (for a profile's totals) */
            continue;
        rows->rows[rows->count++] = (struct row){ .frames = r->raw_count ? row_text(naming, r) : NULL,
                                                  .ruby = r->ruby, .thread = r->thread, .count = r->count,
                                                  .bytes = r->bytes, .peak = r->peak, .allocs = r->allocs };
        r->ruby = NULL;   /* the named row's now */
        heap_raw_free_row(r);
        if (progress && ++named % 1000 == 0)
            fprintf(stderr, "\rmemprof: symbolizing: %zu sites", named);
    }
    if (progress && named >= 1000)
        fprintf(stderr, "\rmemprof: symbolized %zu sites\n", named);
}

/* Stage 2: the rows with names that match --filter (on the names: before
 * merging, the same text either way); how many did not match. */
static size_t keep_matching(struct rows *rows, const char *filter)
{
    size_t kept = 0, unmatched = 0;
    for (size_t i = 0; i < rows->count; i++) {
        struct row *r = &rows->rows[i];
        if (r->frames && row_matches(r, filter)) {
            rows->rows[kept++] = *r;
        } else {
            unmatched += r->frames != NULL;
            row_free(r);
        }
    }
    rows->count = kept;
    return unmatched;
}

/* Stage 3: rows that name the same frames as one, largest bytes first. The
 * peak's sum is an upper bound: the parts may have peaked at different times. */
static void merge_rows(struct rows *rows)
{
    qsort(rows->rows, rows->count, sizeof *rows->rows, by_frames);
    size_t kept = 0;
    for (size_t i = 0; i < rows->count; i++) {
        struct row *r = &rows->rows[i];
        if (kept && by_frames(&rows->rows[kept - 1], r) == 0) {
            struct row *into = &rows->rows[kept - 1];
            into->count += r->count;
            into->bytes += r->bytes;
            into->allocs += r->allocs;
            into->peak += r->peak;
            row_free(r);
        } else {
            rows->rows[kept++] = *r;
        }
    }
    rows->count = kept;
    qsort(rows->rows, rows->count, sizeof *rows->rows, by_bytes);
}

/* Stage 4: the header line, or the line saying why there are no rows. */
static void write_header(FILE *out, const struct raw_report *report, const struct rows *rows, pid_t pid,
                         const struct heap_report_options *opt, size_t unmatched)
{
    if (rows->count)
        fprintf(out, "== memprof: live C heap blocks %s pid %ld (count bytes peak_bytes allocs site) ==\n",
                report->when[0] ? report->when : opt->when ? opt->when : "at exit of", (long)pid);
    else if (opt->filter && unmatched)
        fprintf(out, "memprof: no live C heap rows match '%s'\n", opt->filter);
    else
        fprintf(out, "memprof: no live C heap blocks recorded\n");
    if (rows->count && report->sample)
        fprintf(out,
                "memprof: sampled, an allocation per %" PRIu64 " bytes on average: figures are estimates; a row of "
                "B bytes is within 3*sqrt(B*%" PRIu64 ") of its exact figure (99.7%%)\n",
                report->sample, report->sample);
}

/* Stage 5: one row, its frames under its figures, then its Ruby line and thread. */
static void write_row(FILE *out, const struct raw_report *report, const struct row *r)
{
    static const char indent[] = "                                             ";
    /* The figures formatted by the runtime's writer, not fprintf: a quarter
     * of the time of a report of thousands of rows. */
    const uint64_t figure[] = { r->count, r->bytes, r->peak, r->allocs };
    const int width[] = { 7, 10, 10, 8 };
    char figures[4 * 22];
    struct out o;
    out_init_fd(&o, -1, figures, sizeof figures);
    for (int i = 0; i < 4; i++) {
        out_u64_width(&o, figure[i], width[i]);
        out_char(&o, ' ');
    }
    fwrite(o.buf, 1, o.len, out);
    for (const char *f = r->frames, *nl; f; f = nl ? nl + 1 : NULL) {
        nl = strchr(f, '\n');
        if (*f == '\t')
            fputs(indent, out), fputs("inlined into ", out), f++;
        else if (f != r->frames)
            fputs(indent, out), fputs("from ", out);
        fwrite(f, 1, nl ? (size_t)(nl - f) : strlen(f), out);
        putc('\n', out);
    }
    if (r->ruby)
        fprintf(out, "%sruby %s\n", indent, r->ruby);
    if (r->thread) {
        const struct raw_thread *t = thread_named(report->threads, report->thread_count, r->thread);
        if (t)
            fprintf(out, "%sthread %u (tid %ld, %s)\n", indent, r->thread, t->tid, t->name);
        else
            fprintf(out, "%sthread %u\n", indent, r->thread);
    }
}

#define FOOTER_ALL_THREADS 64

/* Stage 6: what follows the rows: those left out, the threads' figures,
 * memprof's own memory, the stacks walked. */
static void write_footer(FILE *out, const struct raw_report *report, size_t rows, size_t shown)
{
    if (shown < rows)
        fprintf(out, "memprof: %zu more rows not shown (--top %zu)\n", rows - shown, shown);
    if (!rows)
        return;
    if (report->thread_count > 1) {
        /* Past FOOTER_ALL_THREADS (threads that come and go), those that hold
         * no live block are one line. */
        bool all = report->thread_count <= FOOTER_ALL_THREADS;
        size_t quiet = 0;
        uint64_t quiet_allocs = 0;
        fprintf(out, "memprof: by thread (thread tid count bytes allocs name):\n");
        for (size_t i = 0; i < report->thread_count; i++) {
            const struct raw_thread *t = &report->threads[i];
            if (!all && !t->count) {
                quiet++;
                quiet_allocs += t->allocs;
                continue;
            }
            fprintf(out, "%7u %8ld %7" PRIu64 " %10" PRIu64 " %8" PRIu64 " %s\n", t->serial, t->tid, t->count,
                    t->bytes, t->allocs, t->name);
        }
        if (quiet)
            fprintf(out, "memprof: %zu more threads hold no live block (%" PRIu64 " allocations between them)\n",
                    quiet, quiet_allocs);
    }
    if (report->blocks && report->table_bytes)
        fprintf(out, "memprof: %lu live blocks%s; memprof's tables take %lu bytes (%.1f per block)\n",
                report->blocks, report->sample ? " recorded" : "", report->table_bytes,
                (double)report->table_bytes / (double)report->blocks);
    else if (report->blocks)   /* read from a core: the tables' size is not known */
        fprintf(out, "memprof: %lu live blocks\n", report->blocks);
    uint64_t stacks = report->stacks_walked + report->stacks_remembered;
    if (stacks && report->frames > 1)   /* not the few walks of wrappers' callers */
        fprintf(out, "memprof: %" PRIu64 " stacks: %" PRIu64 " walked, %" PRIu64
                     " found again from the last walk at their entry (%.0f%%)\n",
                stacks, report->stacks_walked, report->stacks_remembered,
                100.0 * (double)report->stacks_remembered / (double)stacks);
}

int heap_report_symbolize(FILE *raw, FILE *out, pid_t pid, const struct heap_report_options *opt)
{
    /* Only entries below `opened` are read: zeroing the 260 KB cache would
     * cost the run's report 65 page faults for nothing. With keep_open the
     * objects stay open for the next call: a refresh names what it named
     * before without reading the files again. */
    static struct naming naming;
    static bool kept;   /* the last call's symbolizers are still open */
    if (!kept)
        naming.opened = 0;
    struct raw_report report;
    if (heap_raw_read(raw, &report) != 0) {
        fprintf(out, "memprof: out of memory reading the heap report\n");
        return -1;
    }
    if (report.warnings)
        for (const char *w = report.warnings, *nl; *w; w = nl + 1) {
            nl = strchr(w, '\n');
            fprintf(out, "memprof: warning: %.*s\n", (int)(nl - w), w);
        }
    naming.frames = report.frames;
    snprintf(naming.wrappers, sizeof naming.wrappers, "%s", report.wrappers);
    struct rows rows = { .rows = calloc(report.count ? report.count : 1, sizeof *rows.rows) };
    if (!rows.rows) {
        heap_raw_free(&report);
        fprintf(out, "memprof: out of memory naming the heap report\n");
        return -1;
    }
    name_rows(&naming, &report, &rows);
    size_t unmatched = keep_matching(&rows, opt->filter);
    merge_rows(&rows);
    size_t shown = opt->top && opt->top < rows.count ? opt->top : rows.count;
    write_header(out, &report, &rows, pid ? pid : (pid_t)report.pid, opt, unmatched);
    for (size_t i = 0; i < rows.count; i++) {
        if (i < shown)
            write_row(out, &report, &rows.rows[i]);
        row_free(&rows.rows[i]);
    }
    write_footer(out, &report, rows.count, shown);
    free(rows.rows);
    heap_raw_free(&report);
    if (!(kept = opt->keep_open)) {
        for (size_t i = 0; i < naming.opened; i++)
            symbolizer_close(naming.cache[i].s);
        naming.opened = 0;
    }
    return ferror(out) ? -1 : 0;
}

enum { TABLE_TOP, TABLE_FILTER, TABLE_SYSROOT };
static const struct cli_option heap_table_options[] = {
    [TABLE_TOP] = CLI_NUMBER("top", 0, "N", "only the first N rows (0: all)", 0, LONG_MAX),
    [TABLE_FILTER] = CLI_VALUE("filter", 0, "TEXT", "only rows whose named frames contain TEXT"),
    [TABLE_SYSROOT] = CLI_VALUE("sysroot", 0, "DIR", "look for the report's files under DIR first (another\n"
                                                     "machine's, copied here; also MEMPROF_SYSROOT)"),
    { 0 },
};
static const struct cli_command heap_table_command = {
    .name = "heap-table", .operands = "[FILE|-]", .max_operands = 1,
    .summary = "Name a raw C heap report (MEMPROF_HEAP_OUTPUT's; GDB's memprof-info heap hands the\n"
               "runtime's rows to it) as run --heap does. Input that is not a raw report (the\n"
               "runtime's one-line reason) passes through, with status 1.",
    .options = heap_table_options,
};

int cmd_heap_table(int argc, char **argv)
{
    struct heap_report_options opt = { .when = "in" };
    struct cli_args a;
    int o;
    cli_begin(&a, &heap_table_command, argc, argv);
    while ((o = cli_next(&a)) >= 0) {
        if (o == TABLE_TOP)
            opt.top = (unsigned long)a.number;
        else if (o == TABLE_FILTER)
            opt.filter = a.value;
        else if (o == TABLE_SYSROOT)
            sysroot_set(a.value);
    }
    if (o != CLI_END)
        return cli_status(o);
    const char *path = a.operand_count ? a.operands[0] : "-";
    FILE *in = input_open(path);
    if (!in) {
        fprintf(stderr, "memprof: cannot read %s: %s\n", path, strerror(errno));
        return 2;
    }
    int first = getc(in);
    if (first != '#') {   /* not a report: the runtime's reason, as it is */
        for (int c = first; c != EOF; c = getc(in))
            putchar(c);
        input_close(in);
        return 1;
    }
    ungetc(first, in);
    int rc = heap_report_symbolize(in, stdout, 0, &opt);
    input_close(in);
    return rc == 0 ? 0 : 1;
}

/* memprof name-sites: copy text, each "0xADDRESS OBJECT+0xOFFSET" a
 * runtime wrote (memprof-where in GDB) named as a heap row's frame is. */
int name_sites(FILE *in, FILE *out)
{
    static struct naming naming;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, in) > 0) {
        /* " 0xADDRESS OBJECT+0xOFFSET": the first such pair of the line. */
        char *at, *raw = NULL;
        const char *object = NULL;
        uint64_t site = 0;
        size_t length = 0;
        for (at = strstr(line, " 0x"); at; at = strstr(at + 1, " 0x")) {
            char *end;
            site = strtoull(at + 1, &end, 16);
            if (*end != ' ')
                continue;
            object = end + 1;
            length = strcspn(object, " \n");
            raw = strndup(object, length);
            char *plus = raw ? strrchr(raw, '+') : NULL;
            if (plus && strncmp(plus, "+0x", 3) == 0)
                break;
            free(raw);
            raw = NULL;
        }
        if (!raw) {
            fputs(line, out);
            continue;
        }
        struct named named[SYMBOLIZER_MAX_INLINED];
        size_t count = 0;
        name_address(&naming, &(struct raw_frame){ site, raw }, named, &count, SYMBOLIZER_MAX_INLINED);
        fprintf(out, "%.*s", (int)(at + 1 - line), line);
        for (size_t i = 0; i < count; i++) {
            fprintf(out, "%s%s", i ? ", inlined into " : "", named[i].text);
            free(named[i].text);
        }
        fputs(object + length, out);
        free(raw);
    }
    free(line);
    for (size_t i = 0; i < naming.opened; i++)
        symbolizer_close(naming.cache[i].s);
    return ferror(out) ? 1 : 0;
}

static const struct cli_command name_sites_command = {
    .name = "name-sites", .operands = "< TEXT", .max_operands = 0,
    .summary = "Copy stdin to stdout, each 'ADDRESS OBJECT+OFFSET' in it named (GDB's memprof-where).",
};

int cmd_name_sites(int argc, char **argv)
{
    FILE *in = input_stdin();
    struct cli_args a;
    int o;
    cli_begin(&a, &name_sites_command, argc, argv);
    while ((o = cli_next(&a)) >= 0)
        ;
    if (o != CLI_END)
        return cli_status(o);
    return name_sites(in, stdout);
}
