/* memprof top PID: a running process's memory, refreshed every second,
 * without stopping it.
 *
 * Each refresh reads the runtime's tables from the process as the core
 * reader reads a core (core_open_process: process_vm_readv, the versioned
 * descriptor), checks the tables' generation before and after, and reads
 * again when it changed (an array moved or unmapped meanwhile): a torn read
 * is never shown. The C heap's sites are named by the symbolizer, kept open
 * across refreshes; the Ruby table is read as from a core (no GC can be
 * asked: what the GC has not found dead yet counts). Shown: the process's
 * RSS beside memprof's live bytes and their trend, and the top sites of
 * each table with their growth since the last refresh and allocations per
 * second. On a terminal, keys sort (s), filter (/) and quit (q); otherwise,
 * or with --batch, one plain snapshot after another. */
#include "commands.h"
#include "cli.h"
#include "core/core_image.h"
#include "report/report_table.h"
#include <errno.h>
#include <inttypes.h>
#include <langinfo.h>
#include <limits.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define READ_TRIES 5
#define FIRST_SNAPSHOT_SECONDS 5  /* tried again, 50 ms apart, for so long */
#define TREND_POINTS 40

enum { TOP_INTERVAL, TOP_ROWS, TOP_BATCH, TOP_ITERATIONS, TOP_SORT, TOP_FILTER };
static const char *const sort_words[] = { "bytes", "count", "growth", NULL };
static const struct cli_option top_options[] = {
    [TOP_INTERVAL] = CLI_NUMBER("interval", 0, "SECONDS", "refresh every SECONDS (default 1)", 1, 3600),
    [TOP_ROWS] = CLI_NUMBER("rows", 0, "N", "at most N rows of each table (default: what the terminal holds;\n"
                                            "20 with --batch)", 1, 100000),
    [TOP_BATCH] = CLI_FLAG("batch", 0, "plain snapshots one after another, no keys (also when stdout is\n"
                                       "not a terminal)"),
    [TOP_ITERATIONS] = CLI_NUMBER("iterations", 'n', "N", "stop after N refreshes (default: until the process\n"
                                                          "ends, q or Ctrl-C)", 1, 1000000),
    [TOP_SORT] = CLI_WORDS("sort", 0, "KEY", "bytes (the default), count or growth (since the last refresh)",
                           sort_words),
    [TOP_FILTER] = CLI_VALUE("filter", 0, "TEXT", "only sites that contain TEXT"),
    { 0 },
};
static const struct cli_command top_command = {
    .name = "top", .operands = "PID", .min_operands = 1, .max_operands = 1,
    .summary = "The memory of the running process PID, refreshed every second without stopping it:\n"
               "its RSS beside memprof's live bytes and their trend, and the top sites of the Ruby\n"
               "table and of the C heap with their growth and allocations per second. PID must have\n"
               "the runtime (memprof run, LD_PRELOAD, or GDB's memprof-attach). Keys: s sorts (bytes,\n"
               "count, growth), / filters, q quits.",
    .options = top_options,
};

enum sort_key { SORT_BYTES, SORT_COUNT, SORT_GROWTH };

/* One table's rows with what changed since the last refresh. */
struct shown_row {
    const struct table_row *row;
    int64_t count_change, bytes_change;
    double allocs_per_s;
};

struct snapshot {
    bool ok, has_ruby, has_heap;
    struct report_table ruby, heap;   /* rows added up, sorted by site for lookups */
    struct report_table ruby_made;    /* Ruby objects made at each site since the start (v[0]), by site */
    uint64_t rss, heap_bytes, heap_blocks, ruby_objects;
    double when;
    unsigned retries;
    bool changed;                     /* not taken: the tables changed while read */
};

struct view {
    pid_t pid;
    char name[64];
    unsigned interval, rows, iterations;
    bool batch, utf8;
    enum sort_key sort;
    char filter[256];
    char typing[256];   /* the filter being typed after '/' */
    bool filtering;
    double trend[TREND_POINTS];
    unsigned trend_count;
    unsigned refreshes, retried, refused;   /* refreshes; reads read again; refreshes given up */
};

static volatile sig_atomic_t stop_asked;
static struct termios saved_termios;
static bool raw_terminal;

static void on_stop_signal(int signo)
{
    (void)signo;
    stop_asked = 1;
}

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint64_t process_rss(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
    FILE *f = fopen(path, "re");
    uint64_t kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %" SCNu64 " kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb * 1024;
}

static void process_name(pid_t pid, char *out, size_t size)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/comm", (long)pid);
    FILE *f = fopen(path, "re");
    if (!f || !fgets(out, (int)size, f))
        snprintf(out, size, "?");
    out[strcspn(out, "\n")] = '\0';
    if (f)
        fclose(f);
}

/* A table written into memory, read back: false when it cannot be. */
static bool table_of(struct report_table *t, char **text, size_t *len)
{
    FILE *in = fmemopen(*text, *len, "r");
    if (!in)
        return false;
    int rc = report_table_read(in, "the table", "top", true, t);
    fclose(in);
    return rc == 0;
}

static int by_site(const void *a, const void *b)
{
    return strcmp(((const struct table_row *)a)->site, ((const struct table_row *)b)->site);
}

/* A site's text with the indentation of its lines dropped: the report
 * indents its callers by its count column's width. */
static void unindent(char *site)
{
    char *to = site;
    for (const char *from = site; *from;) {
        *to++ = *from;
        if (*from++ == '\n')
            from += strspn(from, " ");
    }
    *to = '\0';
}

/* core_ruby_allocations's text: "COUNT site" and the site's lines under it. */
static bool read_made(struct report_table *t, const char *text)
{
    struct table_row *row = NULL;
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (line[0] >= '0' && line[0] <= '9') {
            struct table_row *rows = t->count < t->cap ? t->rows : realloc(t->rows, (t->cap = t->cap * 2 + 256) * sizeof *rows);
            if (!rows)
                return false;
            t->rows = rows;
            row = &t->rows[t->count];
            char *space = memchr(line, ' ', len);
            *row = (struct table_row){ .site = space ? strndup(space + 1, len - (size_t)(space + 1 - line)) : NULL };
            row->v[0] = strtoull(line, NULL, 10);
            if (!row->site)
                return false;
            t->count++;
        } else if (row) {
            size_t had = strlen(row->site);
            char *more = realloc(row->site, had + len + 2);
            if (!more)
                return false;
            more[had] = '\n';
            memcpy(more + had + 1, line, len);
            more[had + 1 + len] = '\0';
            row->site = more;
        }
        line = end ? end + 1 : NULL;
    }
    for (size_t i = 0; i < t->count; i++)
        unindent(t->rows[i].site);
    qsort(t->rows, t->count, sizeof *t->rows, by_site);
    return true;
}

/* The tables of `pid` read once, whole: false (and `why`) when the read
 * failed or the tables changed meanwhile. */
static bool read_once(pid_t pid, struct snapshot *s, char *why, size_t why_size, bool *no_runtime, bool *gone)
{
    struct core_image c;
    char *heap_raw = NULL, *ruby_text = NULL, *heap_named = NULL, *made_text = NULL;
    size_t heap_raw_len = 0, ruby_len = 0, heap_named_len = 0, made_len = 0;
    bool ok = core_open_process(&c, pid);
    if (!ok) {
        snprintf(why, why_size, "%s", c.why);
        *gone = kill(pid, 0) != 0 && errno == ESRCH;
        *no_runtime = !*gone && strstr(c.why, "(no libmemprof.so among its files)") != NULL;
        core_close(&c);
        return false;
    }
    uint64_t before = 0, after = 0;
    ok = core_read_u64(&c, c.tables.tables_generation, &before, "the tables' generation");
    uint8_t running = 0;
    s->has_heap = ok && core_peek(&c, c.tables.heap_running, &running, 1) && running;
    s->has_ruby = ok && core_has_ruby(&c);
    if (ok && s->has_heap) {
        FILE *raw = open_memstream(&heap_raw, &heap_raw_len);
        ok = raw && core_heap_raw(&c, raw);
        if (raw)
            fclose(raw);
    }
    if (ok && s->has_ruby) {
        FILE *out = open_memstream(&ruby_text, &ruby_len);
        struct core_ruby_options opt = { 0 };
        ok = out && core_ruby_report(&c, out, &opt);
        if (out)
            fclose(out);
        FILE *made = ok ? open_memstream(&made_text, &made_len) : NULL;
        ok = made && core_ruby_allocations(&c, made);
        if (made)
            fclose(made);
    }
    ok = ok && core_read_u64(&c, c.tables.tables_generation, &after, "the tables' generation");
    if (ok && before != after) {
        snprintf(why, why_size, "the tables changed while they were read");
        s->changed = true;
        ok = false;
    } else if (!ok) {
        snprintf(why, why_size, "%s", c.why[0] ? c.why : strerror(ENOMEM));
    }
    core_close(&c);
    s->when = now_seconds();   /* the moment the counts were read: the rates' clock */
    if (ok && s->has_heap) {   /* named outside the read: it takes the longest */
        FILE *raw = fmemopen(heap_raw, heap_raw_len, "r");
        FILE *named = open_memstream(&heap_named, &heap_named_len);
        struct heap_report_options opt = { .when = "in", .keep_open = true };
        ok = raw && named && heap_report_symbolize(raw, named, pid, &opt) == 0;
        if (raw)
            fclose(raw);
        if (named)
            fclose(named);
        ok = ok && table_of(&s->heap, &heap_named, &heap_named_len);
        if (!ok)
            snprintf(why, why_size, "the C heap's report could not be named");
    }
    if (ok && s->has_ruby && !(ok = table_of(&s->ruby, &ruby_text, &ruby_len) && read_made(&s->ruby_made, made_text)))
        snprintf(why, why_size, "the Ruby table could not be read back");
    free(made_text);
    free(heap_raw);
    free(heap_named);
    free(ruby_text);
    return ok;
}

static void snapshot_free(struct snapshot *s)
{
    report_table_free(&s->ruby);
    report_table_free(&s->heap);
    for (size_t i = 0; i < s->ruby_made.count; i++)
        free(s->ruby_made.rows[i].site);
    free(s->ruby_made.rows);
    memset(s, 0, sizeof *s);
}

/* A snapshot, read again while the tables change (READ_TRIES times). */
static bool take_snapshot(struct view *v, struct snapshot *s, char *why, size_t why_size, bool *no_runtime,
                          bool *gone)
{
    for (unsigned try = 0; try < READ_TRIES; try++) {
        memset(s, 0, sizeof *s);
        if (read_once(v->pid, s, why, why_size, no_runtime, gone)) {
            s->ok = true;
            s->retries = try;
            v->retried += try;
            break;
        }
        bool changed = s->changed;
        snapshot_free(s);
        s->changed = changed;
        if (*no_runtime || *gone)
            return false;
    }
    if (!s->ok) {
        v->refused++;
        return false;
    }
    s->rss = process_rss(v->pid);
    report_table_add_up(&s->heap, -1);   /* by site, for lookups */
    report_table_add_up(&s->ruby, -1);
    for (size_t i = 0; i < s->heap.count; i++) {
        s->heap_blocks += s->heap.rows[i].v[0];
        s->heap_bytes += s->heap.rows[i].v[1];
    }
    for (size_t i = 0; i < s->ruby.count; i++)
        s->ruby_objects += s->ruby.rows[i].v[0];
    return true;
}

static const struct table_row *find_row(const struct report_table *t, const char *site)
{
    struct table_row key = { .site = (char *)site };
    return t->count ? bsearch(&key, t->rows, t->count, sizeof *t->rows, by_site) : NULL;
}

static enum sort_key sorting;
static bool sort_has_bytes;
static int by_sort_key(const void *a, const void *b)
{
    const struct shown_row *x = a, *y = b;
    int64_t p, q;
    if (sorting == SORT_GROWTH) {
        p = sort_has_bytes ? x->bytes_change : x->count_change;
        q = sort_has_bytes ? y->bytes_change : y->count_change;
    } else {
        int column = sorting == SORT_BYTES && sort_has_bytes ? 1 : 0;
        p = (int64_t)x->row->v[column];
        q = (int64_t)y->row->v[column];
    }
    return p != q ? (p < q) - (p > q) : strcmp(x->row->site, y->row->site);
}

/* The rows to show of one table: filtered, with their changes, sorted. */
/* The objects made at `site` (a Ruby row's), or 0. */
static uint64_t made_at(const struct report_table *made, const char *site)
{
    char *key = strdup(site);
    if (!key)
        return 0;
    unindent(key);
    const struct table_row *r = find_row(made, key);
    free(key);
    return r ? r->v[0] : 0;
}

static struct shown_row *rows_to_show(const struct view *v, const struct report_table *now,
                                      const struct report_table *before, const struct report_table *made_now,
                                      const struct report_table *made_before, double seconds, bool bytes, size_t *n)
{
    struct shown_row *rows = calloc(now->count + 1, sizeof *rows);
    *n = 0;
    for (size_t i = 0; rows && i < now->count; i++) {
        const struct table_row *r = &now->rows[i];
        if (v->filter[0] && !strstr(r->site, v->filter))
            continue;
        const struct table_row *old = before ? find_row(before, r->site) : NULL;
        struct shown_row s = { .row = r };
        if (before) {
            s.count_change = (int64_t)r->v[0] - (int64_t)(old ? old->v[0] : 0);
            if (bytes)
                s.bytes_change = (int64_t)r->v[1] - (int64_t)(old ? old->v[1] : 0);
            /* The C heap's allocs column: every block ever made there. */
            if (bytes && now->numbers >= 4 && seconds > 0)
                s.allocs_per_s = (double)((int64_t)r->v[3] - (int64_t)(old ? old->v[3] : 0)) / seconds;
            /* The Ruby tracer's count of the objects made at each origin. */
            if (!bytes && made_now && made_before && seconds > 0)
                s.allocs_per_s =
                    (double)((int64_t)made_at(made_now, r->site) - (int64_t)made_at(made_before, r->site)) / seconds;
        }
        rows[(*n)++] = s;
    }
    sorting = v->sort;
    sort_has_bytes = bytes;
    if (rows)
        qsort(rows, *n, sizeof *rows, by_sort_key);
    return rows;
}

/* 1234567 as "1.2 MiB". */
static const char *human(uint64_t bytes, char *out, size_t size)
{
    static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 4)
        v /= 1024, u++;
    snprintf(out, size, u ? "%.1f %s" : "%.0f %s", v, units[u]);
    return out;
}

static void write_trend(FILE *out, const struct view *v)
{
    static const char *const blocks[] = { "\u2581", "\u2582", "\u2583", "\u2584", "\u2585", "\u2586", "\u2587",
                                          "\u2588" };
    static const char ascii[] = "_.-~=+*#";
    double low = 0, high = 0;
    for (unsigned i = 0; i < v->trend_count; i++) {
        if (!i || v->trend[i] < low)
            low = v->trend[i];
        if (!i || v->trend[i] > high)
            high = v->trend[i];
    }
    for (unsigned i = 0; i < v->trend_count; i++) {
        int level = high > low ? (int)((v->trend[i] - low) / (high - low) * 7.0 + 0.5) : 0;
        if (v->utf8)
            fputs(blocks[level], out);
        else
            fputc(ascii[level], out);
    }
}

/* The first line of a site (the rest are its callers and inlined frames). */
static int first_line_length(const char *site)
{
    return (int)strcspn(site, "\n");
}

static void write_table(FILE *out, const struct view *v, const char *title, const struct snapshot *now_s,
                        const struct snapshot *before_s, double seconds, bool bytes, unsigned max_rows, int width,
                        const char *line_end)
{
    size_t n;
    const struct report_table *now = bytes ? &now_s->heap : &now_s->ruby;
    const struct report_table *before = before_s ? (bytes ? &before_s->heap : &before_s->ruby) : NULL;
    struct shown_row *rows = rows_to_show(v, now, before, bytes ? NULL : &now_s->ruby_made,
                                          bytes || !before_s ? NULL : &before_s->ruby_made, seconds, bytes, &n);
    fprintf(out, "%s: %zu sites%s%s%s%s", title, n, v->filter[0] ? " containing '" : "", v->filter,
            v->filter[0] ? "'" : "", line_end);
    if (bytes)
        fprintf(out, "%9s %11s %11s %10s  %s%s", "count", "bytes", "+bytes", "allocs/s", "site", line_end);
    else
        fprintf(out, "%9s %9s %8s  %s%s", "count", "+count", "made/s", "site", line_end);
    int used = bytes ? 46 : 30;
    for (size_t i = 0; rows && i < n && i < max_rows; i++) {
        const struct shown_row *r = &rows[i];
        int len = first_line_length(r->row->site);
        int room = width > used + 8 ? width - used : 8;
        if (bytes)
            fprintf(out, "%9" PRIu64 " %11" PRIu64 " %+11" PRId64 " %10.0f  %.*s%s", r->row->v[0], r->row->v[1],
                    r->bytes_change, r->allocs_per_s, len < room ? len : room, r->row->site, line_end);
        else
            fprintf(out, "%9" PRIu64 " %+9" PRId64 " %8.0f  %.*s%s", r->row->v[0], r->count_change,
                    r->allocs_per_s, len < room ? len : room, r->row->site, line_end);
    }
    free(rows);
}

static void render(FILE *out, struct view *v, const struct snapshot *now, const struct snapshot *before,
                   const char *problem)
{
    struct winsize ws = { 0 };
    bool screen = !v->batch;
    if (screen && ioctl(1, TIOCGWINSZ, &ws) != 0)
        ws.ws_row = 24, ws.ws_col = 80;
    int width = screen ? ws.ws_col : 200;
    const char *line_end = screen ? "\033[K\r\n" : "\n";
    char a[32], b[32], c[32];
    double seconds = before && before->ok ? now->when - before->when : 0;
    if (screen)
        fputs("\033[H", out);
    else
        fprintf(out, "== memprof top: pid %ld (%s), refresh %u ==\n", (long)v->pid, v->name, v->refreshes);
    if (screen)
        fprintf(out, "memprof top: pid %ld (%s), every %u s; sort %s (s), filter %s (/), q quits%s", (long)v->pid,
                v->name, v->interval, sort_words[v->sort], v->filter[0] ? v->filter : "none", line_end);
    fprintf(out, "RSS %s", human(now->rss, a, sizeof a));
    if (now->has_heap)
        fprintf(out, "; C heap %s live in %" PRIu64 " blocks", human(now->heap_bytes, b, sizeof b), now->heap_blocks);
    else
        fprintf(out, "; C heap not traced");
    if (before && before->ok && now->has_heap && seconds > 0)
        fprintf(out, " (%+.1f KiB/s)", ((double)now->heap_bytes - (double)before->heap_bytes) / 1024.0 / seconds);
    if (now->has_ruby)
        fprintf(out, "; Ruby %" PRIu64 " objects", now->ruby_objects);
    fprintf(out, "%s", line_end);
    if (now->has_heap)
        fprintf(out, "trend of the C heap's live bytes (%s to %s): ", human((uint64_t)v->trend[0], b, sizeof b),
                human(now->heap_bytes, c, sizeof c));
    else
        fprintf(out, "trend of live Ruby objects (%.0f to %" PRIu64 "): ", v->trend[0], now->ruby_objects);
    write_trend(out, v);
    fprintf(out, "%s", line_end);
    if (problem)
        fprintf(out, "memprof: %s (reading again next refresh)%s", problem, line_end);
    else if (v->filtering)
        fprintf(out, "filter: %s_%s", v->typing, line_end);
    else
        fprintf(out, "read in place, %u reads retried so far (the tables changed while read)%s", v->retried,
                line_end);
    unsigned rows = v->rows;
    if (!rows) {
        unsigned room = ws.ws_row > 12 ? ws.ws_row - 10u : 2;
        rows = now->has_ruby && now->has_heap ? room / 2 : room;
    }
    if (now->has_ruby) {
        fprintf(out, "%s", line_end);
        write_table(out, v, "Ruby objects (live, by file:line:Class)", now, before, seconds, false, rows, width,
                    line_end);
    }
    if (now->has_heap) {
        fprintf(out, "%s", line_end);
        write_table(out, v, "C heap (live, by site)", now, before, seconds, true, rows, width, line_end);
    }
    if (screen)
        fputs("\033[J", out);
    fflush(out);
}

static void restore_terminal(void)
{
    if (!raw_terminal)
        return;
    tcsetattr(0, TCSAFLUSH, &saved_termios);
    fputs("\033[?25h\033[?1049l", stdout);
    fflush(stdout);
    raw_terminal = false;
}

static void raw_mode(void)
{
    struct termios t;
    if (tcgetattr(0, &saved_termios) != 0)
        return;
    t = saved_termios;
    t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
    t.c_cc[VMIN] = 0;
    t.c_cc[VTIME] = 0;
    tcsetattr(0, TCSAFLUSH, &t);
    raw_terminal = true;
    fputs("\033[?1049h\033[?25l\033[2J", stdout);
    fflush(stdout);
    atexit(restore_terminal);
}

/* A key: false when it quits. */
static bool handle_key(struct view *v, int key)
{
    if (v->filtering) {
        size_t n = strlen(v->typing);
        if (key == '\n' || key == '\r') {
            snprintf(v->filter, sizeof v->filter, "%s", v->typing);
            v->filtering = false;
        } else if (key == 27) {
            v->filtering = false;
        } else if ((key == 127 || key == 8) && n) {
            v->typing[n - 1] = '\0';
        } else if (key >= 32 && key < 127 && n + 1 < sizeof v->typing) {
            v->typing[n] = (char)key;
            v->typing[n + 1] = '\0';
        }
        return true;
    }
    switch (key) {
    case 'q':
    case 'Q':
        return false;
    case 's':
        v->sort = (enum sort_key)((v->sort + 1) % 3);
        break;
    case '/':
        v->filtering = true;
        v->typing[0] = '\0';
        break;
    }
    return true;
}

int cmd_top(int argc, char **argv)
{
    struct view v = { .interval = 1 };
    struct cli_args a;
    int k;
    cli_begin(&a, &top_command, argc, argv);
    while ((k = cli_next(&a)) >= 0) {
        switch (k) {
        case TOP_INTERVAL: v.interval = (unsigned)a.number; break;
        case TOP_ROWS: v.rows = (unsigned)a.number; break;
        case TOP_BATCH: v.batch = true; break;
        case TOP_ITERATIONS: v.iterations = (unsigned)a.number; break;
        case TOP_SORT:
            v.sort = strcmp(a.value, "count") == 0 ? SORT_COUNT : strcmp(a.value, "growth") == 0 ? SORT_GROWTH
                                                                                                 : SORT_BYTES;
            break;
        case TOP_FILTER: snprintf(v.filter, sizeof v.filter, "%s", a.value); break;
        }
    }
    if (k != CLI_END)
        return cli_status(k);
    long pid = memprof_whole_number(a.operands[0], 1, INT_MAX);
    if (pid < 0)
        return cli_fail(&top_command, "'%s' is not a process id", a.operands[0]);
    v.pid = (pid_t)pid;
    if (!isatty(1) || !isatty(0))
        v.batch = true;
    if (v.batch && !v.rows)
        v.rows = 20;
    setlocale(LC_CTYPE, "");
    v.utf8 = strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
    process_name(v.pid, v.name, sizeof v.name);

    struct snapshot before = { 0 }, now = { 0 };
    char why[PATH_MAX + 256];
    bool no_runtime = false, gone = false;
    /* A busy process may change its tables through a whole refresh's tries:
     * the first snapshot is tried again for a while, as later ones are at
     * each refresh. */
    double read_started = now_seconds(), give_up = read_started + FIRST_SNAPSHOT_SECONDS;
    bool first = take_snapshot(&v, &now, why, sizeof why, &no_runtime, &gone);
    while (!first && now.changed && now_seconds() < give_up) {
        nanosleep(&(struct timespec){ 0, 50 * 1000 * 1000 }, NULL);
        first = take_snapshot(&v, &now, why, sizeof why, &no_runtime, &gone);
    }
    if (!first) {
        if (no_runtime)
            fprintf(stderr, "memprof: top: pid %ld has no memprof runtime: start it with memprof run (or "
                            "LD_PRELOAD=%s), or load one with GDB's memprof-attach\n",
                    pid, "libmemprof.so");
        else if (gone)
            fprintf(stderr, "memprof: top: no process %ld\n", pid);
        else
            fprintf(stderr, "memprof: top: %s\n", why);
        return EXIT_USAGE;
    }
    signal(SIGINT, on_stop_signal);
    signal(SIGTERM, on_stop_signal);
    signal(SIGHUP, on_stop_signal);
    if (!v.batch)
        raw_mode();
    const char *problem = NULL;
    for (;;) {
        v.refreshes++;
        if (v.trend_count == TREND_POINTS)
            memmove(v.trend, v.trend + 1, sizeof v.trend - sizeof v.trend[0]), v.trend_count--;
        v.trend[v.trend_count++] = (double)(now.has_heap ? now.heap_bytes : now.ruby_objects);
        render(stdout, &v, &now, before.ok ? &before : NULL, problem);
        if (v.iterations && v.refreshes >= v.iterations)
            break;
        /* Keys until the next refresh, `interval` after the last one was
         * read: reading a large process takes part of it. A read longer
         * than that still leaves a tenth of it to the process and the keys. */
        double next = read_started + v.interval, soonest = now_seconds() + v.interval / 10.0;
        if (next < soonest)
            next = soonest;
        bool quit = false;
        while (!quit && !stop_asked) {
            double left = next - now_seconds();
            if (left <= 0)
                break;
            struct pollfd in = { .fd = 0, .events = POLLIN };
            if (!v.batch && poll(&in, 1, (int)(left * 1000) + 1) == 1) {
                unsigned char key;
                if (read(0, &key, 1) == 1) {
                    quit = !handle_key(&v, key);
                    if (!quit)
                        render(stdout, &v, &now, before.ok ? &before : NULL, problem);
                }
            } else if (v.batch) {
                struct timespec t = { (time_t)left, (long)((left - (double)(time_t)left) * 1e9) };
                nanosleep(&t, NULL);
            }
        }
        if (quit || stop_asked)
            break;
        struct snapshot next_snapshot;
        read_started = now_seconds();
        if (take_snapshot(&v, &next_snapshot, why, sizeof why, &no_runtime, &gone)) {
            snapshot_free(&before);
            before = now;
            now = next_snapshot;
            problem = NULL;
        } else if (gone) {
            restore_terminal();
            fprintf(stderr, "memprof: top: pid %ld ended\n", pid);
            break;
        } else {
            problem = why;   /* shown, and the last good snapshot stays */
        }
    }
    restore_terminal();
    snapshot_free(&before);
    snapshot_free(&now);
    return 0;
}
