/* memprof merge: one table from several reports of one kind (the workers
 * of a forking server, or several runs), rows added by site.
 *
 * A text report's table is read as it is written: its header names the
 * kind ("live Ruby objects", "live C heap blocks") and the columns, the
 * numbers before the last one; a row is those numbers and the site, and
 * the indented lines under it ("from", "inlined into", "ruby") are part of
 * the site. Rows are added where the whole site is the same; the merged
 * table keeps the columns, each number's width, and the order the first
 * report's rows are in (the column they fall by). Sections after the
 * table (threads, strings, status lines) are left out. Profiles
 * (profile.proto) are merged by pprof.c. */
#include "../commands.h"
#include "../cli.h"
#include "../format/pprof.h"
#include "../grow.h"
#include "../input.h"
#include "../output.h"
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NUMBERS 6   /* a table's numeric columns: the C heap report has 4 */

struct merge_row {
    char *site;   /* the text after the numbers, and the lines under the row */
    uint64_t v[MAX_NUMBERS];
};

struct table {
    const char *kind; /* "Ruby objects", "C heap blocks" */
    char *columns;    /* "(count bytes peak_bytes allocs site)" */
    char *header;     /* the first report's, for the comment */
    int numbers;
    int width[MAX_NUMBERS];
    int sort_column;  /* the first report's rows fall by it */
    struct merge_row *rows;
    size_t count, cap;
};

static const char *const kinds[] = { "Ruby objects", "C heap blocks", NULL };

static const struct cli_option merge_options[] = {
    CLI_VALUE("output", 'o', "FILE", "write the merged table or profile to FILE (mode 0600, replaced\n"
                                     "whole), not stdout"),
    { 0 },
};
static const struct cli_command merge_command = {
    .name = "merge", .operands = "REPORT...", .min_operands = 1, .max_operands = -1,
    .summary = "One table from several reports of one kind (a forking server's workers, several\n"
               "runs): Ruby tables or C heap reports, rows added by site (peak_bytes is the sum of\n"
               "each report's peak); or profiles (--pprof-proto) merged into one profile. Mixed\n"
               "kinds or a damaged file: one line naming the file, status 2.",
    .options = merge_options,
};

/* "== memprof: live KIND ... (COLUMNS) ==": the kind and the columns, or
 * false when the line is not a table's header. */
static bool parse_header(const char *line, const char **kind, char **columns, int *numbers)
{
    static const char start[] = "== memprof: live ";
    if (strncmp(line, start, sizeof start - 1) != 0)
        return false;
    const char *after = line + sizeof start - 1;
    *kind = NULL;
    for (const char *const *k = kinds; *k; k++)
        if (strncmp(after, *k, strlen(*k)) == 0)
            *kind = *k;
    const char *open = strrchr(line, '('), *close = open ? strchr(open, ')') : NULL;
    if (!*kind || !close || strcmp(close, ") ==") != 0)
        return false;
    int words = 1;
    for (const char *p = open + 1; p < close; p++)
        words += *p == ' ';
    if (words < 2 || words - 1 > MAX_NUMBERS)
        return false;
    *numbers = words - 1;
    return (*columns = strndup(open, (size_t)(close + 1 - open))) != NULL;
}

/* A row's numbers (`n` of them) and where its site starts: false when the
 * line is not that shape. `ends` gets where each number ends. */
static bool parse_row(const char *line, int n, uint64_t *v, const char **site, int *ends)
{
    const char *p = line;
    for (int i = 0; i < n; i++) {
        while (*p == ' ')
            p++;
        if (!isdigit((unsigned char)*p))
            return false;
        errno = 0;
        char *end;
        v[i] = strtoull(p, &end, 10);
        if (errno || (*end != ' '))
            return false;
        p = end;
        ends[i] = (int)(p - line);
    }
    if (*p != ' ')
        return false;
    *site = p + 1;
    return **site != '\0';
}

static bool append_to_site(struct merge_row *r, const char *line)
{
    size_t had = strlen(r->site), n = strlen(line);
    char *more = realloc(r->site, had + 1 + n + 1);
    if (!more)
        return false;
    more[had] = '\n';
    memcpy(more + had + 1, line, n + 1);
    r->site = more;
    return true;
}

/* One report's table added to `t` (its kind and columns set by the first):
 * 0, or 2 after a one-line message naming `name` (1: memory ran out). */
static int read_table(FILE *in, const char *name, bool first, struct table *t)
{
    char *line = NULL;
    size_t cap = 0, line_number = 0, start = t->count;
    bool in_table = false, falls[MAX_NUMBERS];
    int rc = 0;
    for (int i = 0; i < MAX_NUMBERS; i++)
        falls[i] = true;
    while (rc == 0 && getline(&line, &cap, in) > 0) {
        line_number++;
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "== ", 3) == 0) {
            if (in_table)
                break;   /* the table ends where the next section starts */
            const char *kind;
            char *columns;
            int numbers;
            if (!parse_header(line, &kind, &columns, &numbers))
                continue;
            in_table = true;
            if (first) {
                t->kind = kind;
                t->columns = columns;
                t->numbers = numbers;
                if (!(t->header = strdup(line)))
                    rc = 1;
            } else {
                if (strcmp(kind, t->kind) != 0 || strcmp(columns, t->columns) != 0) {
                    fprintf(stderr, "memprof: merge: %s: a table of live %s %s, not of live %s %s as the first\n",
                            name, kind, columns, t->kind, t->columns);
                    rc = 2;
                }
                free(columns);
            }
            continue;
        }
        if (!in_table || !line[0] || line[0] == '#' || strncmp(line, "memprof", 7) == 0)
            continue;
        uint64_t v[MAX_NUMBERS];
        const char *site;
        int ends[MAX_NUMBERS];
        if (parse_row(line, t->numbers, v, &site, ends)) {
            struct merge_row *rows = grow_array(t->rows, t->count, &t->cap, sizeof *rows, 256);
            char *text = rows ? strdup(site) : NULL;
            if (!text) {
                t->rows = rows ? rows : t->rows;
                rc = 1;
                break;
            }
            t->rows = rows;
            struct merge_row *r = &t->rows[t->count++];
            *r = (struct merge_row){ .site = text };
            memcpy(r->v, v, sizeof v);
            for (int i = 0; first && i < t->numbers; i++) {
                int width = ends[i] - (i ? ends[i - 1] + 1 : 0);
                if (width > t->width[i])
                    t->width[i] = width;
                if (t->count > start + 1 && r->v[i] > r[-1].v[i])
                    falls[i] = false;
            }
        } else if (line[0] == ' ' && t->count > start) {
            if (!append_to_site(&t->rows[t->count - 1], line))
                rc = 1;
        } else {
            fprintf(stderr, "memprof: merge: %s:%zu: not a row of a table of live %s: '%.60s'\n", name,
                    line_number, t->kind, line);
            rc = 2;
        }
    }
    free(line);
    if (rc == 0 && ferror(in)) {
        fprintf(stderr, "memprof: merge: cannot read %s: %s\n", name, strerror(errno ? errno : EIO));
        rc = 2;
    }
    if (rc == 0 && !in_table) {
        fprintf(stderr, "memprof: merge: %s: not a memprof report (no table of live Ruby objects or C heap blocks)\n",
                name);
        rc = 2;
    }
    if (rc == 1)
        fputs("memprof: merge: out of memory\n", stderr);
    for (int i = 0; first && rc == 0 && i < t->numbers; i++)
        if (falls[i]) {
            t->sort_column = i;
            break;
        }
    return rc;
}

static int by_site(const void *a, const void *b)
{
    return strcmp(((const struct merge_row *)a)->site, ((const struct merge_row *)b)->site);
}

static int sort_column;
static int by_column(const void *a, const void *b)
{
    const struct merge_row *x = a, *y = b;
    uint64_t p = x->v[sort_column], q = y->v[sort_column];
    return p != q ? (p < q) - (p > q) : strcmp(x->site, y->site);
}

/* Rows with the same site added into one. */
static void add_up(struct table *t)
{
    qsort(t->rows, t->count, sizeof *t->rows, by_site);
    size_t kept = 0;
    for (size_t i = 0; i < t->count; i++) {
        if (kept && strcmp(t->rows[kept - 1].site, t->rows[i].site) == 0) {
            for (int k = 0; k < t->numbers; k++)
                t->rows[kept - 1].v[k] += t->rows[i].v[k];
            free(t->rows[i].site);
        } else {
            t->rows[kept++] = t->rows[i];
        }
    }
    t->count = kept;
    sort_column = t->sort_column;
    qsort(t->rows, t->count, sizeof *t->rows, by_column);
}

static void write_table(FILE *out, const struct table *t, char **names, int n)
{
    fprintf(out, "== memprof: live %s in %d reports merged %s ==\n", t->kind, n, t->columns);
    for (int i = 0; i < n; i++)
        fprintf(out, "# %s\n", names[i]);
    fprintf(out, "# the first's header: %s\n", t->header);
    uint64_t totals[MAX_NUMBERS] = { 0 };
    for (size_t r = 0; r < t->count; r++) {
        for (int k = 0; k < t->numbers; k++) {
            fprintf(out, k ? " %*" PRIu64 : "%*" PRIu64, t->width[k], t->rows[r].v[k]);
            totals[k] += t->rows[r].v[k];
        }
        fprintf(out, " %s\n", t->rows[r].site);
    }
    /* The first column is a count; the second, when the columns name bytes, the bytes. */
    fprintf(out, "memprof: %d reports merged: %zu sites, %" PRIu64 " live", n, t->count, totals[0]);
    if (t->numbers > 1 && strncmp(t->columns, "(count bytes", 12) == 0)
        fprintf(out, ", %" PRIu64 " bytes", totals[1]);
    fputc('\n', out);
}

static void table_free(struct table *t)
{
    for (size_t i = 0; i < t->count; i++)
        free(t->rows[i].site);
    free(t->rows);
    free(t->columns);
    free(t->header);
}

int cmd_merge(int argc, char **argv)
{
    const char *output = NULL;
    struct cli_args a;
    int k;
    cli_begin(&a, &merge_command, argc, argv);
    while ((k = cli_next(&a)) >= 0)
        output = a.value;
    if (k != CLI_END)
        return cli_status(k);
    int n = a.operand_count;
    FILE **ins = calloc((size_t)n, sizeof *ins);
    if (!ins) {
        fputs("memprof: merge: out of memory\n", stderr);
        return EXIT_FAILED;
    }
    int rc = 0, profiles = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        if (!(ins[i] = input_open(a.operands[i]))) {
            fprintf(stderr, "memprof: merge: cannot read %s: %s\n", a.operands[i], strerror(errno));
            rc = EXIT_USAGE;
        } else if (pprof_looks_like(ins[i])) {
            profiles++;
        }
        if (rc == 0 && profiles && profiles != i + 1) {
            bool profile = pprof_looks_like(ins[i]);
            fprintf(stderr, "memprof: merge: %s: %s, where %s is %s\n", a.operands[i],
                    profile ? "a profile" : "a text report", a.operands[0], profile ? "a text report" : "a profile");
            rc = EXIT_USAGE;
        }
    }
    struct table t = { 0 };
    for (int i = 0; i < n && rc == 0 && !profiles; i++)
        rc = read_table(ins[i], a.operands[i], i == 0, &t);
    struct output out;
    if (rc == 0 && (rc = output_open(&out, output)) == 0) {
        if (profiles) {
            rc = pprof_merge(ins, (const char *const *)a.operands, (size_t)n, out.fp);
        } else {
            add_up(&t);
            write_table(out.fp, &t, a.operands, n);
        }
        int closed = output_close(&out, rc != 0);
        rc = rc ? rc : closed;
    }
    for (int i = 0; i < n; i++)
        if (ins[i])
            input_close(ins[i]);
    free(ins);
    table_free(&t);
    return rc;
}
