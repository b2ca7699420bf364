/* Reading a report's table (report_table.h). */
#include "report_table.h"
#include "../grow.h"
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const kinds[] = { "Ruby objects", "C heap blocks", NULL };

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
    if (words < 2 || words - 1 > TABLE_MAX_NUMBERS)
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

static bool append_to_site(struct table_row *r, const char *line)
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
int report_table_read(FILE *in, const char *name, const char *cmd, bool first, struct report_table *t)
{
    char *line = NULL;
    size_t cap = 0, line_number = 0, start = t->count;
    bool in_table = false, falls[TABLE_MAX_NUMBERS];
    int rc = 0;
    for (int i = 0; i < TABLE_MAX_NUMBERS; i++)
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
                    fprintf(stderr, "memprof: %s: %s: a table of live %s %s, not of live %s %s as the first\n",
                            cmd, name, kind, columns, t->kind, t->columns);
                    rc = 2;
                }
                free(columns);
            }
            continue;
        }
        if (!in_table || !line[0] || line[0] == '#' || strncmp(line, "memprof", 7) == 0)
            continue;
        uint64_t v[TABLE_MAX_NUMBERS];
        const char *site;
        int ends[TABLE_MAX_NUMBERS];
        if (parse_row(line, t->numbers, v, &site, ends)) {
            struct table_row *rows = grow_array(t->rows, t->count, &t->cap, sizeof *rows, 256);
            char *text = rows ? strdup(site) : NULL;
            if (!text) {
                t->rows = rows ? rows : t->rows;
                rc = 1;
                break;
            }
            t->rows = rows;
            struct table_row *r = &t->rows[t->count++];
            *r = (struct table_row){ .site = text };
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
            fprintf(stderr, "memprof: %s: %s:%zu: not a row of a table of live %s: '%.60s'\n", cmd, name,
                    line_number, t->kind, line);
            rc = 2;
        }
    }
    free(line);
    if (rc == 0 && ferror(in)) {
        fprintf(stderr, "memprof: %s: cannot read %s: %s\n", cmd, name, strerror(errno ? errno : EIO));
        rc = 2;
    }
    if (rc == 0 && !in_table) {
        fprintf(stderr, "memprof: %s: %s: not a memprof report (no table of live Ruby objects or C heap blocks)\n",
                cmd, name);
        rc = 2;
    }
    if (rc == 1)
        fprintf(stderr, "memprof: %s: out of memory\n", cmd);
    for (int i = 0; first && rc == 0 && i < t->numbers; i++)
        if (falls[i]) {
            t->sort_column = i;
            break;
        }
    return rc;
}

static int by_site(const void *a, const void *b)
{
    return strcmp(((const struct table_row *)a)->site, ((const struct table_row *)b)->site);
}

static int sort_column;
static int by_column(const void *a, const void *b)
{
    const struct table_row *x = a, *y = b;
    uint64_t p = x->v[sort_column], q = y->v[sort_column];
    return p != q ? (p < q) - (p > q) : strcmp(x->site, y->site);
}

void report_table_add_up(struct report_table *t, int column)
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
    if (column < 0)
        return;
    sort_column = column;
    qsort(t->rows, t->count, sizeof *t->rows, by_column);
}

void report_table_free(struct report_table *t)
{
    for (size_t i = 0; i < t->count; i++)
        free(t->rows[i].site);
    free(t->rows);
    free(t->columns);
    free(t->header);
    memset(t, 0, sizeof *t);
}
