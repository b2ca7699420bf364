/* memprof collapse, flamegraph, proto, timeline and diff: memprof's outputs
 * (reports, dumps, collapsed stacks, profiles, timelines) turned into what
 * other tools read, or compared. */
#include "../commands.h"
#include "../cli.h"
#include "../format/flamegraph.h"
#include "../input.h"
#include "../output.h"
#include "../format/pprof.h"
#include "../format/speedscope.h"
#include "stacks.h"
#include <unistd.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct options {
    const char *output, *title, *format;
    const char *inputs[2];
    int input_count;
    int weight;   /* 0: bytes when the input has them, 1: count, 2: bytes */
};

#define OUTPUT_OPTION(what) CLI_VALUE("output", 'o', "FILE", "write " what " to FILE (mode 0600, replaced whole), not stdout")
#define WEIGHT_OPTIONS                                                                          \
    CLI_FLAG("count", 0, "weigh each stack by its objects or blocks"),                          \
    CLI_FLAG("bytes", 0, "weigh each stack by its bytes (the default when the input has them)")
static const char *const collapse_formats[] = { "collapsed", "speedscope", NULL };
static const struct cli_option collapse_options[] = {
    WEIGHT_OPTIONS,
    CLI_WORDS("format", 0, "F", "collapsed ('outer;...;inner WEIGHT' lines, the default) or speedscope\n"
                        "(speedscope's JSON file format, unit bytes)", collapse_formats),
    OUTPUT_OPTION("the stacks"),
    { 0 },
};
static const struct cli_command collapse_command = {
    .name = "collapse", .operands = "REPORT", .min_operands = 1, .max_operands = 1,
    .summary = "A report, dump (JSON lines), heap report or profile as collapsed stacks, for flame\n"
               "graph tools. REPORT '-' reads stdin.",
    .options = collapse_options,
};
static const struct cli_option flamegraph_options[] = {
    WEIGHT_OPTIONS,
    CLI_VALUE("title", 0, "TEXT", "the picture's title (default: the input's name)"),
    OUTPUT_OPTION("the SVG"),
    { 0 },
};
static const struct cli_command flamegraph_command = {
    .name = "flamegraph", .operands = "REPORT", .min_operands = 1, .max_operands = 1,
    .summary = "The stacks of a report, dump, heap report or profile as an SVG flame graph, drawn by\n"
               "memprof. REPORT '-' reads stdin.",
    .options = flamegraph_options,
};
static const struct cli_option proto_options[] = {
    OUTPUT_OPTION("the profile (FILE.pb.gz)"),
    { 0 },
};
static const struct cli_command proto_command = {
    .name = "proto", .operands = "REPORT", .min_operands = 1, .max_operands = 1,
    .summary = "A report as pprof's profile.proto, gzipped (go tool pprof, Pyroscope, Grafana,\n"
               "speedscope): a raw C heap report named here, with every sample type; a Ruby table\n"
               "or dump.",
    .options = proto_options,
};
static const struct cli_option timeline_options[] = {
    OUTPUT_OPTION("a chart (FILE.svg) or the series (FILE.csv)"),
    { 0 },
};
static const struct cli_command timeline_command = {
    .name = "timeline", .operands = "TIMELINE", .min_operands = 1, .max_operands = 1,
    .summary = "The runtime's MEMPROF_TIMELINE file as a chart (-o FILE.svg) or a CSV series\n"
               "(-o FILE.csv, or stdout).",
    .options = timeline_options,
};
static const struct cli_option diff_options[] = {
    OUTPUT_OPTION("the table"),
    { 0 },
};
static const struct cli_command diff_command = {
    .name = "diff", .operands = "BEFORE AFTER", .min_operands = 2, .max_operands = 2,
    .summary = "Per-site growth from BEFORE to AFTER (reports, dumps, profiles or collapsed stacks of\n"
               "one kind), largest growth first; '-' reads stdin.",
    .options = diff_options,
};

/* The options the stack commands share, by name: CLI_END, or CLI_HELP or
 * CLI_ERROR (cli_status gives the exit status). */
static int parse(const struct cli_command *c, int argc, char **argv, struct options *o)
{
    *o = (struct options){ 0 };
    struct cli_args a;
    int k;
    cli_begin(&a, c, argc, argv);
    while ((k = cli_next(&a)) >= 0) {
        const char *name = c->options[k].name;
        if (strcmp(name, "output") == 0)
            o->output = a.value;
        else if (strcmp(name, "title") == 0)
            o->title = a.value;
        else if (strcmp(name, "format") == 0)
            o->format = a.value;
        else
            o->weight = strcmp(name, "count") == 0 ? 1 : 2;
    }
    if (k != CLI_END)
        return k;
    for (int i = 0; i < a.operand_count; i++) {
        o->inputs[o->input_count++] = a.operands[i];
        if (strcmp(a.operands[i], "-") == 0)
            input_stdin();   /* read to its end even if the other input fails */
    }
    return CLI_END;
}

/* Read one input ("-": stdin): 0, or 1 after a message. */
static int load(const char *path, struct stacks *s)
{
    FILE *in = input_open(path);
    if (!in) {
        fprintf(stderr, "memprof: cannot read %s: %s\n", path, strerror(errno));
        return 1;
    }
    int rc = stacks_read(in, path, s);
    input_close(in);
    return rc ? 1 : 0;
}

static bool by_bytes(const struct options *o, const struct stacks *s)
{
    return o->weight == 2 || (o->weight == 0 && s->have_bytes);
}

int cmd_collapse(int argc, char **argv)
{
    struct options o;
    struct stacks s;
    int rc = parse(&collapse_command, argc, argv, &o);
    if (rc != CLI_END)
        return cli_status(rc);
    bool speedscope = o.format && strcmp(o.format, "speedscope") == 0;
    if ((rc = load(o.inputs[0], &s)))
        return rc;
    if (o.weight == 2 && !s.have_bytes) {
        stacks_free(&s);
        fprintf(stderr, "memprof: collapse: %s has no bytes (use --count)\n", o.inputs[0]);
        return 2;
    }
    struct output out;
    if ((rc = output_open(&out, o.output))) {
        stacks_free(&s);
        return rc;
    }
    bool bytes = by_bytes(&o, &s), failed = false;
    if (speedscope) {
        const char *slash = strrchr(o.inputs[0], '/');
        failed = speedscope_write(&s, out.fp, slash ? slash + 1 : o.inputs[0], bytes, "memprof " PACKAGE_VERSION) != 0;
        if (failed)
            fprintf(stderr, "memprof: collapse: out of memory for the speedscope file\n");
    } else {
        for (size_t i = 0; i < s.count; i++)
            fprintf(out.fp, "%s %" PRIu64 "\n", s.rows[i].frames, bytes ? s.rows[i].bytes : s.rows[i].count);
    }
    stacks_free(&s);
    return output_close(&out, failed);
}

int cmd_flamegraph(int argc, char **argv)
{
    struct options o;
    struct stacks s;
    int rc = parse(&flamegraph_command, argc, argv, &o);
    if (rc != CLI_END)
        return cli_status(rc);
    if ((rc = load(o.inputs[0], &s)))
        return rc;
    struct output out;
    if ((rc = output_open(&out, o.output))) {
        stacks_free(&s);
        return rc;
    }
    char title[512];
    snprintf(title, sizeof title, "memprof: %s", o.title ? o.title : o.inputs[0]);
    bool failed = flamegraph_write(&s, out.fp, title, by_bytes(&o, &s)) != 0;
    stacks_free(&s);
    return output_close(&out, failed);
}

/* A rewindable copy of stdin (a raw heap report is read twice). */
static FILE *rewindable(FILE *in)
{
    FILE *copy = tmpfile();
    char chunk[1 << 16];
    size_t n;
    while (copy && (n = fread(chunk, 1, sizeof chunk, in)) > 0)
        if (fwrite(chunk, 1, n, copy) != n) {
            fclose(copy);
            return NULL;
        }
    if (copy)
        rewind(copy);
    return copy;
}

int cmd_proto(int argc, char **argv)
{
    struct options o;
    int rc = parse(&proto_command, argc, argv, &o);
    if (rc != CLI_END)
        return cli_status(rc);
    if (!o.output && isatty(STDOUT_FILENO))
        return cli_fail(&proto_command, "a profile is binary: give -o FILE, or a pipe");
    const char *path = o.inputs[0];
    FILE *in = strcmp(path, "-") == 0 ? rewindable(input_stdin()) : fopen(path, "r");
    if (!in) {
        fprintf(stderr, "memprof: cannot read %s: %s\n", path, strerror(errno));
        return 1;
    }
    /* The runtime's raw C heap report names its sites here; any other
     * input is read as stacks. */
    char first[512] = "";
    bool raw = fgets(first, sizeof first, in) && strncmp(first, "# memprof heap:", 15) == 0;
    rewind(in);
    if (strncmp(first, "memprof: ", 9) == 0) {   /* the runtime's one-line reason (GDB's memprof-dump) */
        fputs(first, stderr);
        fclose(in);
        return 1;
    }
    struct stacks s = { 0 };
    if (!raw && stacks_read(in, path, &s) != 0) {
        fclose(in);
        return 1;
    }
    struct output out;
    char why[256] = "";
    if (!(rc = output_open(&out, o.output))) {
        bool failed = raw ? heap_report_proto(in, out.fp, why, sizeof why) != 0
                          : stacks_proto(&s, out.fp, why, sizeof why) != 0;
        if (failed)
            fprintf(stderr, "memprof: proto: %s\n", why);
        rc = output_close(&out, failed);
    }
    fclose(in);
    stacks_free(&s);
    return rc;
}

int cmd_timeline(int argc, char **argv)
{
    struct options o;
    int rc = parse(&timeline_command, argc, argv, &o);
    if (rc != CLI_END)
        return cli_status(rc);
    const char *path = o.inputs[0];
    FILE *in = input_open(path);
    if (!in) {
        fprintf(stderr, "memprof: cannot read %s: %s\n", path, strerror(errno));
        return 1;
    }
    rc = timeline_convert(in, path, o.output);
    input_close(in);
    return rc;
}

/* A site as people read it: the innermost frame, then "  from" its callers;
 * a Ruby row's "file:line" and class together, as in the table. */
static void write_site(FILE *out, const char *frames, const char *kind)
{
    char *copy = strdup(frames);
    char *parts[128];
    size_t n = 0;
    for (char *save = NULL, *p = copy ? strtok_r(copy, ";", &save) : NULL; p && n < 128; p = strtok_r(NULL, ";", &save))
        parts[n++] = p;
    bool ruby = strcmp(kind, "ruby") == 0 || strcmp(kind, "dump") == 0;
    if (n >= 2 && ruby) {
        fprintf(out, "%s:%s\n", parts[n - 2], parts[n - 1]);
        n -= 2;
    } else if (n) {
        fprintf(out, "%s\n", parts[--n]);
    } else {
        fputc('\n', out);
    }
    while (n-- > 0)
        fprintf(out, "%22s  from %s\n", "", parts[n]);
    free(copy);
}

struct change {
    const char *frames;
    int64_t count, bytes;
};

static bool sort_on_bytes;

static int by_growth(const void *x, const void *y)
{
    const struct change *a = x, *b = y;
    int64_t ka = sort_on_bytes ? a->bytes : a->count, kb = sort_on_bytes ? b->bytes : b->count;
    if (ka != kb)
        return ka > kb ? -1 : 1;
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    return strcmp(a->frames, b->frames);
}

int cmd_diff(int argc, char **argv)
{
    struct options o;
    struct stacks a, b;
    int rc = parse(&diff_command, argc, argv, &o);
    if (rc != CLI_END)
        return cli_status(rc);
    if ((rc = load(o.inputs[0], &a)))
        return rc;
    if ((rc = load(o.inputs[1], &b))) {
        stacks_free(&a);
        return rc;
    }
    struct change *changes = calloc(a.count + b.count + 1, sizeof *changes);
    size_t n = 0, i = 0, j = 0;
    /* Bytes compared only when both sides have them. */
    bool bytes = a.have_bytes && b.have_bytes;
    while (changes && (i < a.count || j < b.count)) {
        int c = i == a.count ? 1 : j == b.count ? -1 : strcmp(a.rows[i].frames, b.rows[j].frames);
        struct change ch;
        if (c < 0) {
            ch = (struct change){ a.rows[i].frames, -(int64_t)a.rows[i].count, -(int64_t)a.rows[i].bytes };
            i++;
        } else if (c > 0) {
            ch = (struct change){ b.rows[j].frames, (int64_t)b.rows[j].count, (int64_t)b.rows[j].bytes };
            j++;
        } else {
            ch = (struct change){ b.rows[j].frames, (int64_t)b.rows[j].count - (int64_t)a.rows[i].count,
                                  (int64_t)b.rows[j].bytes - (int64_t)a.rows[i].bytes };
            i++, j++;
        }
        if (!bytes)
            ch.bytes = 0;
        if (ch.count || ch.bytes)
            changes[n++] = ch;
    }
    struct output out;
    if (!changes) {
        fputs("memprof: diff: out of memory\n", stderr);
        rc = 1;
    } else if (!(rc = output_open(&out, o.output))) {
        sort_on_bytes = bytes;
        qsort(changes, n, sizeof *changes, by_growth);
        int64_t total_count = 0, total_bytes = 0;
        fprintf(out.fp, "== memprof diff: %s -> %s (%s site), largest growth first ==\n", o.inputs[0], o.inputs[1],
                bytes ? "count bytes" : "count");
        for (size_t k = 0; k < n; k++) {
            total_count += changes[k].count;
            total_bytes += changes[k].bytes;
            if (bytes)
                fprintf(out.fp, "%+10" PRId64 " %+11" PRId64 " ", changes[k].count, changes[k].bytes);
            else
                fprintf(out.fp, "%+10" PRId64 " ", changes[k].count);
            write_site(out.fp, changes[k].frames, b.kind);
        }
        if (n == 0)
            fputs("memprof: no change\n", out.fp);
        else if (bytes)
            fprintf(out.fp, "memprof: %zu sites changed: %+" PRId64 " live, %+" PRId64 " bytes\n", n, total_count,
                    total_bytes);
        else
            fprintf(out.fp, "memprof: %zu sites changed: %+" PRId64 " live\n", n, total_count);
        rc = output_close(&out, false);
    }
    free(changes);
    stacks_free(&a);
    stacks_free(&b);
    return rc;
}
