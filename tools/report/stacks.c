/* Reading memprof's outputs back as stacks (stacks.h).
 *
 * The text reports are read row by row: a row is its numbers and its site,
 * then indented "from" lines for its callers (innermost first) and, in the
 * C heap report, its Ruby line; a stack lists them outermost first, the
 * Ruby line outermost of all. How many numbers lead a row tells the report:
 * one or two, the Ruby table; four, the named C heap report; five and an
 * address, the raw one. Sections that are not rows (the threads, the
 * status) are skipped by their "==" headers. A gzipped pprof profile is
 * read by pprof.c. */
#include "stacks.h"
#include "../grow.h"
#include "../format/pprof.h"
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void stacks_free(struct stacks *s)
{
    for (size_t i = 0; i < s->count; i++)
        free(s->rows[i].frames);
    free(s->rows);
    *s = (struct stacks){ 0 };
}

static struct stack *add_row(struct stacks *s, char *frames, uint64_t count, uint64_t bytes)
{
    struct stack *rows = frames ? grow_array(s->rows, s->count, &s->cap, sizeof *rows, 256) : NULL;
    if (!rows) {
        free(frames);
        s->short_of_memory = true;
        return NULL;
    }
    s->rows = rows;
    s->rows[s->count] = (struct stack){ frames, count, bytes, 0 };
    return &s->rows[s->count++];
}

static int by_frames(const void *a, const void *b)
{
    return strcmp(((const struct stack *)a)->frames, ((const struct stack *)b)->frames);
}

void stacks_sort_by_frames(struct stacks *s)
{
    qsort(s->rows, s->count, sizeof *s->rows, by_frames);
}

/* Sum the rows with equal frames. */
static void merge(struct stacks *s)
{
    stacks_sort_by_frames(s);
    size_t kept = 0;
    for (size_t i = 0; i < s->count; i++) {
        if (kept && strcmp(s->rows[kept - 1].frames, s->rows[i].frames) == 0) {
            s->rows[kept - 1].count += s->rows[i].count;
            s->rows[kept - 1].bytes += s->rows[i].bytes;
            s->rows[kept - 1].allocated += s->rows[i].allocated;
            free(s->rows[i].frames);
        } else {
            s->rows[kept++] = s->rows[i];
        }
    }
    s->count = kept;
}

/* A frame for a collapsed stack: no ';' (the separator) and no line end. */
static char *frame_text(const char *s, size_t n)
{
    char *f = strndup(s, n);
    for (char *p = f; p && *p; p++)
        if (*p == ';' || *p == '\n' || *p == '\r')
            *p = ',';
    return f;
}

/* "outer;...;inner": `inner` frames (innermost first) put outermost first. */
static char *join_outermost_first(char **inner, size_t n)
{
    size_t len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(inner[i]) + 1;
    char *out = malloc(len), *at = out;
    if (!out)
        return NULL;
    *at = '\0';
    for (size_t i = n; i-- > 0;) {
        size_t l = strlen(inner[i]);
        memcpy(at, inner[i], l);
        at += l;
        *at++ = i ? ';' : '\0';
    }
    if (!n)
        *out = '\0';
    return out;
}

#define MAX_FRAMES 80

/* The row being read: its frames innermost first. */
struct pending {
    bool open;
    char *frames[MAX_FRAMES];
    size_t n;
    char *ruby;            /* the C heap row's Ruby line */
    uint64_t count, bytes, allocated;
    bool short_of_memory;  /* a frame could not be made */
};

static void push_frame(struct pending *p, char *f)
{
    if (f && p->n < MAX_FRAMES)
        p->frames[p->n++] = f;
    else
        free(f);
    p->short_of_memory |= !f;
}

static void flush(struct stacks *s, struct pending *p)
{
    s->short_of_memory |= p->short_of_memory;
    if (p->open) {
        if (p->ruby)
            push_frame(p, p->ruby);
        struct stack *row = add_row(s, join_outermost_first(p->frames, p->n), p->count, p->bytes);
        if (row)
            row->allocated = p->allocated;
    } else {
        free(p->ruby);
    }
    for (size_t i = 0; i < p->n; i++)
        free(p->frames[i]);
    *p = (struct pending){ 0 };
}

/* The C heap report's site text without the object in parentheses. */
static char *heap_frame(const char *text)
{
    size_t n = strcspn(text, "\n");
    while (n && isspace((unsigned char)text[n - 1]))
        n--;
    if (n && text[n - 1] == ')') {
        const char *open = NULL;
        for (const char *p = text; p < text + n; p++)
            if (p[0] == ' ' && p[1] == '(')
                open = p;
        if (open)
            n = (size_t)(open - text);
    }
    return frame_text(text, n);
}

/* A Ruby table's "file:line:Class": frames "file:line" and "Class". */
bool stacks_ruby_site_split(const char *site, size_t n, const char **file_end, const char **class_start)
{
    for (const char *c = site, *end = site + n; (c = memchr(c, ':', (size_t)(end - c))) != NULL; c++) {
        if (!isdigit((unsigned char)c[1]))
            continue;
        const char *d = c + 1;
        while (isdigit((unsigned char)*d))
            d++;
        if (*d == ':') {
            *file_end = c;
            *class_start = d + 1;
            return true;
        }
    }
    return false;
}

static void ruby_site(struct pending *p, const char *text)
{
    size_t n = strcspn(text, "\n");
    const char *file_end, *class_start;
    if (stacks_ruby_site_split(text, n, &file_end, &class_start)) {
        push_frame(p, frame_text(class_start, n - (size_t)(class_start - text)));   /* the class, innermost */
        push_frame(p, frame_text(text, (size_t)(class_start - 1 - text)));
        return;
    }
    push_frame(p, frame_text(text, n));
}

/* Leading whole numbers of a line, up to 5; *rest after them. */
static int leading_numbers(const char *line, uint64_t *v, const char **rest)
{
    int n = 0;
    const char *p = line;
    while (n < 5) {
        while (*p == ' ')
            p++;
        if (!isdigit((unsigned char)*p))
            break;
        char *end;
        uint64_t x = strtoull(p, &end, 10);
        if (*end != ' ')
            break;
        v[n++] = x;
        p = end;
    }
    while (*p == ' ')
        p++;
    *rest = p;
    return n;
}

/* --- JSON lines (ObjectSpace.dump_all's schema) ------------------------------- */

/* The string or number after "key": in a one-line JSON object, copied into
 * `out` (without quotes; escapes kept as written). False when absent. */
static bool json_field(const char *line, const char *key, char *out, size_t size)
{
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":", key);
    const char *p = strstr(line, pattern);
    if (!p)
        return false;
    p += strlen(pattern);
    while (*p == ' ')
        p++;
    size_t n = 0;
    if (*p == '"') {
        for (p++; *p && *p != '"' && n + 1 < size; p++) {
            if (*p == '\\' && p[1])
                p++;
            out[n++] = *p;
        }
    } else {
        while (*p && *p != ',' && *p != '}' && n + 1 < size)
            out[n++] = *p++;
    }
    out[n] = '\0';
    return true;
}

struct class_name { char address[32]; char *name; };

static int by_address(const void *a, const void *b)
{
    return strcmp(((const struct class_name *)a)->address, ((const struct class_name *)b)->address);
}

/* Rows keyed "file:line;@ADDRESS" (or ";(TYPE)"), names put in at the end. */
static void read_dump(FILE *in, char *first, struct stacks *s)
{
    struct class_name *names = NULL;
    size_t name_count = 0, name_cap = 0;
    char *line = first;
    size_t cap = 0;
    char file[4096], num[64], klass[32], type[32], name[512];
    do {
        if (line[0] != '{')
            continue;
        if (!json_field(line, "type", type, sizeof type))
            continue;
        if ((strcmp(type, "CLASS") == 0 || strcmp(type, "MODULE") == 0) && json_field(line, "name", name, sizeof name) &&
            json_field(line, "address", klass, sizeof klass)) {
            struct class_name *more = grow_array(names, name_count, &name_cap, sizeof *names, 1024);
            names = more ? more : names;
            char *copy = more ? strdup(name) : NULL;
            if (!copy) {
                s->short_of_memory = true;
                break;
            }
            snprintf(names[name_count].address, sizeof names[name_count].address, "%s", klass);
            names[name_count++].name = copy;
        }
        if (!json_field(line, "address", num, sizeof num))
            continue;   /* the roots */
        uint64_t memsize = json_field(line, "memsize", num, sizeof num) ? strtoull(num, NULL, 10) : 0;
        char site[4200];
        if (json_field(line, "file", file, sizeof file) && json_field(line, "line", num, sizeof num))
            snprintf(site, sizeof site, "%s:%s", file, num);
        else
            snprintf(site, sizeof site, "(no file)");
        char leaf[64];
        if (json_field(line, "class", klass, sizeof klass) && strcmp(type, "IMEMO") != 0)
            snprintf(leaf, sizeof leaf, "@%s", klass);
        else
            snprintf(leaf, sizeof leaf, "(%s)", type);
        char *frames = NULL;
        char *site_frame = frame_text(site, strlen(site));
        if (site_frame && asprintf(&frames, "%s;%s", site_frame, leaf) < 0)
            frames = NULL;
        free(site_frame);
        add_row(s, frames, 1, memsize);
    } while (getline(&line, &cap, in) > 0);
    free(line);
    qsort(names, name_count, sizeof *names, by_address);
    for (size_t i = 0; i < s->count; i++) {
        char *at = strrchr(s->rows[i].frames, ';');
        if (!at || at[1] != '@')
            continue;
        struct class_name key;
        snprintf(key.address, sizeof key.address, "%s", at + 2);
        struct class_name *found = bsearch(&key, names, name_count, sizeof *names, by_address);
        char *renamed = NULL;
        *at = '\0';
        if (asprintf(&renamed, "%s;%s", s->rows[i].frames, found && found->name ? found->name : key.address) >= 0) {
            free(s->rows[i].frames);
            s->rows[i].frames = renamed;
        } else {
            *at = ';';
            s->short_of_memory = true;
        }
    }
    for (size_t i = 0; i < name_count; i++)
        free(names[i].name);
    free(names);
    s->have_bytes = true;
    s->kind = "dump";
}

/* The end of reading any input: an error when it could not be read whole
 * (getline stops short of the end when memory runs out, without ferror) or
 * memory ran out for its rows, else its rows summed by frames. */
static int finish_reading(FILE *in, const char *name, struct stacks *s)
{
    int err = errno;   /* getline's, when it stopped short */
    const char *why = ferror(in) || !feof(in) ? strerror(err ? err : EIO)
                      : s->short_of_memory  ? strerror(ENOMEM)
                                            : NULL;
    if (why) {
        fprintf(stderr, "memprof: cannot read %s: %s\n", name, why);
        stacks_free(s);
        return -1;
    }
    merge(s);
    return 0;
}

/* --- the text reports, and collapsed stacks ------------------------------------ */

int stacks_read(FILE *in, const char *name, struct stacks *out)
{
    if (pprof_looks_like(in)) {
        if (pprof_read_stacks(in, name, out) != 0)
            return -1;
        merge(out);
        return 0;
    }
    *out = (struct stacks){ .kind = "collapsed" };
    char *line = NULL;
    size_t cap = 0;
    ssize_t got = getline(&line, &cap, in);
    if (got > 0 && line[0] == '{') {
        read_dump(in, line, out);
        return finish_reading(in, name, out);
    }
    struct pending p = { 0 };
    bool skipping = false;
    /* A Ruby table's header names its columns: "(count allocated bytes ...)". */
    bool allocated_column = false;
    for (; got > 0; got = getline(&line, &cap, in)) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "== ", 3) == 0) {
            flush(out, &p);
            skipping = strstr(line, "thread") != NULL || strstr(line, "live strings") != NULL;
            allocated_column = strstr(line, "(count allocated ") != NULL;
            continue;
        }
        if (skipping || line[0] == '#' || strncmp(line, "memprof", 7) == 0 || !line[0])
            continue;
        const char *rest;
        uint64_t v[5];
        int n = leading_numbers(line, v, &rest);
        const char *trimmed = line + strspn(line, " ");
        if (n == 0 && strncmp(trimmed, "from ", 5) == 0) {
            if (p.open)
                push_frame(&p, strcmp(out->kind, "ruby") == 0 ? frame_text(trimmed + 5, strlen(trimmed + 5))
                                                               : heap_frame(trimmed + 5));
        } else if (n == 0 && strncmp(trimmed, "ruby ", 5) == 0) {
            if (p.open && !p.ruby)
                p.short_of_memory |= !(p.ruby = frame_text(trimmed + 5, strlen(trimmed + 5)));
        } else if (n == 0 && (strncmp(trimmed, "thread ", 7) == 0 || line[0] == ' ')) {
            continue;   /* a row's thread, or a line of a section that is not rows */
        } else if (n >= 1 && n <= 2 + allocated_column && *rest && strchr(rest, ':')) {
            flush(out, &p);
            out->kind = "ruby";
            int bytes_at = allocated_column ? 2 : 1;   /* the allocated count is not a weight here */
            out->have_bytes = n > bytes_at;
            out->have_allocated |= allocated_column && n > 1;
            p = (struct pending){ .open = true, .count = v[0], .bytes = n > bytes_at ? v[bytes_at] : 0,
                                  .allocated = allocated_column && n > 1 ? v[1] : 0 };
            ruby_site(&p, rest);
        } else if (n == 4 && *rest) {
            flush(out, &p);
            out->kind = "heap";
            out->have_bytes = true;
            p = (struct pending){ .open = true, .count = v[0], .bytes = v[1] };
            push_frame(&p, heap_frame(rest));
        } else if (n == 5 && strncmp(rest, "0x", 2) == 0) {
            flush(out, &p);
            out->kind = "heap";
            out->have_bytes = true;
            p = (struct pending){ .open = true, .count = v[0], .bytes = v[1] };
            const char *object = strchr(rest, ' ');
            push_frame(&p, heap_frame(object ? object + 1 : rest));
        } else if (n == 0) {
            /* Collapsed: "outer;...;inner COUNT". */
            char *space = strrchr(line, ' ');
            char *end;
            uint64_t weight = space ? strtoull(space + 1, &end, 10) : 0;
            if (!space || space == line || *end || !isdigit((unsigned char)space[1])) {
                fprintf(stderr, "memprof: %s: not a memprof report, dump or collapsed stacks: '%.60s'\n", name, line);
                flush(out, &p);
                free(line);
                stacks_free(out);
                return -1;
            }
            flush(out, &p);
            add_row(out, strndup(line, (size_t)(space - line)), weight, 0);
            out->kind = "collapsed";
        }
    }
    flush(out, &p);
    free(line);
    return finish_reading(in, name, out);
}
