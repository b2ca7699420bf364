/* The Ruby table grouped as memory_profiler prints its report (ruby_groups.h):
 * objects and memory by gem, file, location and class, allocated and
 * retained, each group a table of its own, largest first. */
#include "ruby_groups.h"
#include "../cli.h"
#include "../commands.h"
#include "../grow.h"
#include "../input.h"
#include "stacks.h"
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* One row of the table, or one group's sums. */
struct tally {
    char *key;
    uint64_t retained, allocated, bytes;
    size_t file_len, class_at;   /* a row's "file" and "Class" in its key */
};

struct tallies {
    struct tally *items;
    size_t count, cap;
};

/* The component after `at` up to the next '/', or NULL. */
static char *component(const char *at)
{
    size_t n = strcspn(at, "/");
    return n ? strndup(at, n) : NULL;
}

char *ruby_gem_of(const char *file, const char *app_dir)
{
    if (strncmp(file, "<internal", 9) == 0 || strcmp(file, "<main>") == 0)
        return strdup("<internal>");
    const char *gems = NULL;
    for (const char *at = strstr(file, "/gems/"); at; at = strstr(at + 1, "/gems/"))
        gems = at;
    char *name;
    if (gems && (name = component(gems + 6)) && strchr(gems + 6, '/'))
        return name;   /* gems/NAME-VERSION/..., Debian's rubygems-integration too */
    const char *vendor = strstr(file, "/vendor_ruby/");
    if (vendor && (name = component(vendor + 13))) {   /* a Debian package's library */
        char *dot = strstr(name, ".rb");
        if (dot && !dot[3])
            *dot = '\0';
        return name;
    }
    if (strstr(file, "/lib/ruby/3.") || strstr(file, "/ruby/3.1.0/"))
        return strdup("stdlib");
    size_t n = app_dir ? strlen(app_dir) : 0;
    if (file[0] != '/' || (n > 1 && strncmp(file, app_dir, n) == 0 && file[n] == '/'))
        return strdup("app");   /* where the program ran, or relative to it: its own */
    return strdup("other");
}

/* "file:line:Class" split at the colon that starts ":LINE:". */
static bool split_site(const char *site, const char **file_end, const char **class_start)
{
    return stacks_ruby_site_split(site, strlen(site), file_end, class_start);
}

static char *group_key(enum ruby_group g, const struct tally *row, const char *app_dir)
{
    const char *site = row->key;
    switch (g) {
    case RUBY_GROUP_GEM: {
        char *file = strndup(site, row->file_len);
        char *gem = file ? ruby_gem_of(file, app_dir) : NULL;
        free(file);
        return gem;
    }
    case RUBY_GROUP_FILE: return strndup(site, row->file_len);
    case RUBY_GROUP_LOCATION: return strndup(site, row->class_at - 1);
    case RUBY_GROUP_CLASS: return strdup(site + row->class_at);
    }
    return NULL;
}

static bool add(struct tallies *t, char *key, const struct tally *v)
{
    struct tally *items = key ? grow_array(t->items, t->count, &t->cap, sizeof *items, 256) : NULL;
    if (!items) {
        free(key);
        return false;
    }
    t->items = items;
    t->items[t->count++] = (struct tally){ key, v->retained, v->allocated, v->bytes, v->file_len, v->class_at };
    return true;
}

static void tallies_free(struct tallies *t)
{
    for (size_t i = 0; i < t->count; i++)
        free(t->items[i].key);
    free(t->items);
    *t = (struct tallies){ 0 };
}

static int by_key(const void *a, const void *b)
{
    return strcmp(((const struct tally *)a)->key, ((const struct tally *)b)->key);
}

/* What the groups are sorted by, for qsort (no context argument). */
static enum { BY_RETAINED, BY_ALLOCATED, BY_BYTES } sort_by;

static uint64_t measure(const struct tally *t)
{
    return sort_by == BY_RETAINED ? t->retained : sort_by == BY_ALLOCATED ? t->allocated : t->bytes;
}

static int by_measure(const void *a, const void *b)
{
    uint64_t x = measure(a), y = measure(b);
    return x != y ? (x > y ? -1 : 1) : by_key(a, b);
}

/* The rows' sums by the key of group `g`, keys in order. */
static bool group(const struct tallies *rows, enum ruby_group g, const char *app_dir, struct tallies *out)
{
    *out = (struct tallies){ 0 };
    for (size_t i = 0; i < rows->count; i++)
        if (!add(out, group_key(g, &rows->items[i], app_dir), &rows->items[i])) {
            tallies_free(out);
            return false;
        }
    qsort(out->items, out->count, sizeof *out->items, by_key);
    size_t kept = 0;
    for (size_t i = 0; i < out->count; i++) {
        struct tally *it = &out->items[i];
        if (kept && strcmp(out->items[kept - 1].key, it->key) == 0) {
            out->items[kept - 1].retained += it->retained;
            out->items[kept - 1].allocated += it->allocated;
            out->items[kept - 1].bytes += it->bytes;
            free(it->key);
        } else {
            out->items[kept++] = *it;
        }
    }
    out->count = kept;
    return true;
}

static void write_section(FILE *out, struct tallies *groups, const char *title, const char *name, int by,
                          unsigned long top)
{
    sort_by = by;
    qsort(groups->items, groups->count, sizeof *groups->items, by_measure);
    fprintf(out, "\n%s by %s\n-----------------------------------\n", title, name);
    size_t shown = 0;
    for (size_t i = 0; i < groups->count && (!top || shown < top); i++) {
        if (!measure(&groups->items[i]))
            continue;
        fprintf(out, "%10" PRIu64 "  %s\n", measure(&groups->items[i]), groups->items[i].key);
        shown++;
    }
}

/* The pairs ("VALUE\tfile:line") of one value, sorted: where they start, how many. */
struct value_run {
    size_t first, count;
};

static bool same_value(const char *pair, const char *other)
{
    return strncmp(pair, other, (size_t)(strchr(pair, '\t') - pair) + 1) == 0;
}

static int by_run_count(const void *a, const void *b)
{
    const struct value_run *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return x->first < y->first ? -1 : x->first > y->first;
}

/* The strings most often retained, each with the lines that made them, as
 * memory_profiler's "Retained String Report": `pairs` are "VALUE\tfile:line".
 * False when memory ran out. */
static bool write_strings(FILE *out, struct tallies *pairs, unsigned long top)
{
    qsort(pairs->items, pairs->count, sizeof *pairs->items, by_key);
    struct value_run *runs = malloc((pairs->count ? pairs->count : 1) * sizeof *runs);
    if (!runs)
        return false;
    size_t n = 0;
    for (size_t i = 0; i < pairs->count; i++) {
        if (n && same_value(pairs->items[runs[n - 1].first].key, pairs->items[i].key))
            runs[n - 1].count++;
        else
            runs[n++] = (struct value_run){ i, 1 };
    }
    qsort(runs, n, sizeof *runs, by_run_count);
    fprintf(out, "\nRetained String Report\n-----------------------------------\n");
    bool ok = true;
    for (size_t v = 0; ok && v < n && v < top; v++) {
        const struct tally *first = &pairs->items[runs[v].first];
        size_t vlen = (size_t)(strchr(first->key, '\t') - first->key);
        fprintf(out, "%10zu  %.*s\n", runs[v].count, (int)vlen, first->key);
        /* Its lines, most first: the runs of equal pairs within the value's. */
        struct tallies lines = { 0 };
        for (size_t i = runs[v].first, end = i + runs[v].count; ok && i < end;) {
            size_t j = i;
            while (j < end && strcmp(pairs->items[j].key, pairs->items[i].key) == 0)
                j++;
            ok = add(&lines, strdup(pairs->items[i].key + vlen + 1), &(struct tally){ .retained = j - i });
            i = j;
        }
        sort_by = BY_RETAINED;
        qsort(lines.items, lines.count, sizeof *lines.items, by_measure);
        for (size_t l = 0; l < lines.count; l++)
            fprintf(out, "%10" PRIu64 "  %s\n", lines.items[l].retained, lines.items[l].key);
        fputc('\n', out);
        tallies_free(&lines);
    }
    free(runs);
    return ok;
}

int ruby_groups_write(FILE *table, FILE *out, unsigned groups, unsigned long top, const char *app_dir,
                      unsigned long strings_top)
{
    struct tallies rows = { 0 }, strings = { 0 };
    struct tally hidden = { 0 };
    bool allocated = false, bytes = false, ok = true;
    char *line = NULL;
    size_t cap = 0;
    bool in_strings = false;
    while (ok && getline(&line, &cap, table) > 0) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "== memprof: live Ruby objects", 29) == 0) {
            allocated = strstr(line, "(count allocated") != NULL;
            bytes = strstr(line, " bytes file:line:Class)") != NULL;
            continue;
        }
        if (strncmp(line, "== memprof: live strings", 24) == 0) {
            in_strings = true;
            continue;
        }
        if (in_strings) {   /* "file:line<TAB>VALUE": kept as "VALUE<TAB>file:line" */
            char *tab = strchr(line, '\t');
            char *pair = NULL;
            if (tab && asprintf(&pair, "%s\t%.*s", tab + 1, (int)(tab - line), line) < 0)
                pair = NULL;
            ok = !tab || add(&strings, pair, &(struct tally){ 0 });
            continue;
        }
        uint64_t v[3] = { 0 };
        int n = 0;
        char *at = line, *end;
        while (n < 1 + allocated + bytes) {
            while (*at == ' ')
                at++;
            if (*at < '0' || *at > '9')
                break;
            v[n++] = strtoull(at, &end, 10);
            at = end;
        }
        if (n != 1 + allocated + bytes || *at != ' ')
            continue;   /* a caller's line, a note */
        while (*at == ' ')
            at++;
        const char *file_end, *class_start;
        if (!split_site(at, &file_end, &class_start))
            continue;
        struct tally t = { NULL, v[0], allocated ? v[1] : 0, bytes ? v[1 + allocated] : 0,
                           (size_t)(file_end - at), (size_t)(class_start - at) };
        if (strncmp(class_start, "(hidden", 7) == 0 || strcmp(class_start, "(imemo)") == 0) {
            hidden.retained += t.retained;   /* ObjectSpace lists none of them */
            hidden.allocated += t.allocated;
            continue;
        }
        ok = add(&rows, strdup(at), &t);
    }
    free(line);
    uint64_t total[3] = { 0 };
    for (size_t i = 0; i < rows.count; i++) {
        total[0] += rows.items[i].retained;
        total[1] += rows.items[i].allocated;
        total[2] += rows.items[i].bytes;
    }
    if (ok) {
        if (allocated)
            fprintf(out, "Total allocated: %" PRIu64 " objects (their bytes are not known: each object's size "
                         "is known only once it is filled)\n", total[1]);
        if (bytes)
            fprintf(out, "Total retained:  %" PRIu64 " bytes (%" PRIu64 " objects)\n", total[2], total[0]);
        else
            fprintf(out, "Total retained:  %" PRIu64 " objects\n", total[0]);
        fprintf(out, "Left out, as ObjectSpace lists none of them: %" PRIu64 " hidden and internal objects retained",
                hidden.retained);
        if (allocated)
            fprintf(out, ", %" PRIu64 " allocated", hidden.allocated);
        fputc('\n', out);
    }
    for (unsigned g = 0; ok && g < 4; g++) {
        if (!(groups & (1u << g)))
            continue;
        struct tallies sums;
        if (!(ok = group(&rows, (enum ruby_group)(1u << g), app_dir, &sums)))
            break;
        if (allocated)
            write_section(out, &sums, "allocated objects", ruby_group_words[g], BY_ALLOCATED, top);
        if (bytes)
            write_section(out, &sums, "retained memory", ruby_group_words[g], BY_BYTES, top);
        write_section(out, &sums, "retained objects", ruby_group_words[g], BY_RETAINED, top);
        tallies_free(&sums);
    }
    if (ok && strings_top)
        ok = write_strings(out, &strings, strings_top);
    tallies_free(&rows);
    tallies_free(&strings);
    if (!ok)
        fprintf(stderr, "memprof: out of memory grouping the Ruby table\n");
    return ok && !ferror(out) ? 0 : 1;
}

/* --- memprof groups --------------------------------------------------------- */

const char *const ruby_group_words[] = { "gem", "file", "location", "class", NULL };

unsigned ruby_group_named(const char *word)
{
    for (unsigned g = 0; ruby_group_words[g]; g++)
        if (strcmp(word, ruby_group_words[g]) == 0)
            return 1u << g;
    return 0;
}

enum { GROUPS_GROUP, GROUPS_STRINGS, GROUPS_TOP, GROUPS_OPTIONS };
static const struct cli_option groups_options[] = {
    [GROUPS_GROUP] = CLI_WORDS("group", 0, "G", "gem, file, location or class (repeat for several; default all)",
                               ruby_group_words),
    [GROUPS_STRINGS] = CLI_NUMBER("strings", 0, "N", "the N string values most often retained (the table's\n"
                                                     "strings section)", 1, 1L << 20),
    [GROUPS_TOP] = CLI_NUMBER("top", 0, "N", "rows per table (default 50)", 1, 1L << 40),
    [GROUPS_OPTIONS] = { 0 },
};
static const struct cli_command groups_command = {
    .name = "groups", .operands = "[TABLE|-]", .max_operands = 1,
    .summary = "A Ruby table the runtime wrote (memprof_report with its allocated and bytes columns,\n"
               "and its strings for --strings; Memprof.report's block keeps one) grouped as\n"
               "memory_profiler prints its report. Files under the current directory are the app's.",
    .options = groups_options,
};

int cmd_groups(int argc, char **argv)
{
    unsigned groups = 0;
    unsigned long strings = 0, top = 50;
    struct cli_args a;
    int k;
    cli_begin(&a, &groups_command, argc, argv);
    while ((k = cli_next(&a)) >= 0) {
        if (k == GROUPS_GROUP) {
            groups |= ruby_group_named(a.value);
        } else if (k == GROUPS_STRINGS) {
            strings = (unsigned long)a.number;
        } else {
            top = (unsigned long)a.number;
        }
    }
    if (k != CLI_END)
        return cli_status(k);
    const char *path = a.operand_count ? a.operands[0] : "-";
    FILE *in = input_open(path);
    if (!in) {
        fprintf(stderr, "memprof: cannot read %s: %s\n", path, strerror(errno));
        return EXIT_USAGE;
    }
    char here[PATH_MAX];
    int rc = ruby_groups_write(in, stdout, groups ? groups : 15u, top, getcwd(here, sizeof here), strings);
    input_close(in);
    return rc;
}
