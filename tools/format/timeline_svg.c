/* The C heap over time (the runtime's MEMPROF_TIMELINE file, doc/formats.md)
 * as a CSV series or an SVG stacked area chart, as massif's ms_print and
 * heaptrack's charts show it: the total, the sites that held the most, the
 * rest as "other", the peak marked. Sites are named here, as the heap
 * report names them: the innermost function at the call, file:line. */
#include "../commands.h"
#include "../grow.h"
#include "../output.h"
#include "svg.h"
#include "objfile/symbolizer.h"
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define SHOWN_SITES 8     /* in the chart and the CSV; the rest is "other" */
#define SAMPLE_SITES 10   /* at most, per sample line (the runtime's TOP_SITES) */
#define MAX_OBJECTS 64
#define MAX_NAMES 4096

struct sample {
    uint64_t ms, total;
    size_t n;
    uint32_t name[SAMPLE_SITES];   /* index into the names */
    uint64_t bytes[SAMPLE_SITES];
};

struct timeline {
    long pid;
    struct sample *samples;
    size_t count, cap;
    char *names[MAX_NAMES];        /* distinct site names */
    uint64_t most[MAX_NAMES];      /* each name's highest bytes in a sample */
    size_t name_count;
    uint32_t name_of_id[MAX_NAMES];   /* the file's site id -> name index */
    size_t ids;
    struct { char path[PATH_MAX]; struct symbolizer *s; } objects[MAX_OBJECTS];
    size_t object_count;
};

static struct symbolizer *symbolizer_for(struct timeline *t, const char *path)
{
    for (size_t i = 0; i < t->object_count; i++)
        if (strcmp(t->objects[i].path, path) == 0)
            return t->objects[i].s;
    if (t->object_count == MAX_OBJECTS)
        return NULL;
    char err[PATH_MAX + 128];
    snprintf(t->objects[t->object_count].path, PATH_MAX, "%s", path);
    return t->objects[t->object_count++].s = symbolizer_open(path, err, sizeof err);
}

/* "function file:line (object)" for OBJECT+0xOFFSET, a return address. */
static char *site_name(struct timeline *t, const char *object_offset, uint64_t address)
{
    char object[PATH_MAX];
    snprintf(object, sizeof object, "%s", object_offset);
    char *plus = strrchr(object, '+');
    uint64_t offset = 0;
    char *text = NULL;
    if (!plus || sscanf(plus + 1, "%" SCNx64, &offset) != 1 || !offset) {
        if (asprintf(&text, "0x%" PRIx64, address) < 0)
            return NULL;
        return text;
    }
    *plus = '\0';
    const char *base = strrchr(object, '/');
    base = base ? base + 1 : object;
    struct symbolizer *s = symbolizer_for(t, object);
    struct symbol_info info[SYMBOLIZER_MAX_INLINED];
    size_t frames = s ? symbolizer_frames(s, offset - 1, info, SYMBOLIZER_MAX_INLINED) : 0;
    int rc;
    if (frames && info[0].function && info[0].file)
        rc = asprintf(&text, "%s %s:%u (%s)", demangle(info[0].function), info[0].file, info[0].line, base);
    else if (frames && info[0].function)
        rc = asprintf(&text, "%s+0x%" PRIx64 " (%s)", demangle(info[0].function), info[0].offset + 1, base);
    else
        rc = asprintf(&text, "%s+0x%" PRIx64, base, offset);
    return rc < 0 ? NULL : text;
}

static uint32_t name_index(struct timeline *t, char *name)
{
    for (size_t i = 0; i < t->name_count; i++)
        if (strcmp(t->names[i], name) == 0) {
            free(name);
            return (uint32_t)i;
        }
    t->names[t->name_count] = name;
    return (uint32_t)t->name_count++;
}

/* 0, or 1 after a line naming the problem. */
static int timeline_read(FILE *in, const char *path, struct timeline *t)
{
    char line[PATH_MAX + 256];
    size_t number = 0;
    bool header = false;
    while (fgets(line, sizeof line, in)) {
        number++;
        if (number == 1) {
            header = strncmp(line, "# memprof timeline:", 19) == 0;
            if (!header)
                break;
        }
        if (line[0] == '#') {
            sscanf(line, "# pid %ld", &t->pid);
        } else if (line[0] == 's' && line[1] == ' ') {
            unsigned long id;
            uint64_t address;
            char object[PATH_MAX];
            if (sscanf(line, "s %lu %" SCNx64 " %4095[^\n]", &id, &address, object) != 3 || id != t->ids ||
                t->ids == MAX_NAMES) {
                fprintf(stderr, "memprof: %s:%zu: not a site line of a timeline\n", path, number);
                return 1;
            }
            char *name = site_name(t, object, address);
            if (!name)
                goto no_memory;
            t->name_of_id[t->ids++] = name_index(t, name);
        } else if (line[0] == 't' && line[1] == ' ') {
            struct sample *grown = grow_array(t->samples, t->count, &t->cap, sizeof *grown, 1024);
            if (!grown)
                goto no_memory;
            t->samples = grown;
            struct sample *s = &t->samples[t->count];
            *s = (struct sample){ 0 };
            char *p = line + 2, *end;
            s->ms = strtoull(p, &end, 10);
            bool ok = end != p && *end == ' ';
            s->total = ok ? strtoull(p = end + 1, &end, 10) : 0;
            ok = ok && end != p;
            while (ok && *end == ' ' && s->n < SAMPLE_SITES) {
                unsigned long id = strtoul(p = end + 1, &end, 10);
                ok = end != p && *end == ':' && id < t->ids;
                uint64_t bytes = ok ? strtoull(p = end + 1, &end, 10) : 0;
                ok = ok && end != p;
                if (!ok)
                    break;
                /* Two ids of one name (two calls on a line): one figure. */
                uint32_t name = t->name_of_id[id];
                size_t k = 0;
                while (k < s->n && s->name[k] != name)
                    k++;
                if (k == s->n) {
                    s->name[k] = name;
                    s->n++;
                }
                s->bytes[k] += bytes;
            }
            if (!ok || (*end != '\n' && *end != '\0')) {
                fprintf(stderr, "memprof: %s:%zu: not a sample line of a timeline\n", path, number);
                return 1;
            }
            for (size_t k = 0; k < s->n; k++)
                if (s->bytes[k] > t->most[s->name[k]])
                    t->most[s->name[k]] = s->bytes[k];
            t->count++;
        }
    }
    if (ferror(in)) {
        fprintf(stderr, "memprof: cannot read %s: %s\n", path, strerror(errno));
        return 1;
    }
    if (!header || !t->count) {
        fprintf(stderr, "memprof: %s is not a memprof timeline (MEMPROF_TIMELINE's file)%s\n", path,
                header ? ": it has no sample" : "");
        return 1;
    }
    return 0;
no_memory:
    fprintf(stderr, "memprof: out of memory reading %s\n", path);
    return 1;
}

static void timeline_free(struct timeline *t)
{
    free(t->samples);
    for (size_t i = 0; i < t->name_count; i++)
        free(t->names[i]);
    for (size_t i = 0; i < t->object_count; i++)
        symbolizer_close(t->objects[i].s);
}

/* The sites shown: those that held the most at some moment, largest first. */
static size_t shown_sites(const struct timeline *t, uint32_t *shown)
{
    size_t n = 0;
    for (uint32_t i = 0; i < t->name_count; i++) {
        if (!t->most[i])
            continue;
        size_t at = n < SHOWN_SITES ? n++ : SHOWN_SITES;
        if (at == SHOWN_SITES) {
            if (t->most[i] <= t->most[shown[SHOWN_SITES - 1]])
                continue;
            at = SHOWN_SITES - 1;
        }
        while (at > 0 && t->most[shown[at - 1]] < t->most[i]) {
            shown[at] = shown[at - 1];
            at--;
        }
        shown[at] = i;
    }
    return n;
}

/* A sample's bytes for each shown site (0 when the sample's top did not
 * have it: it is then in "other"), and "other" last. */
static void sample_row(const struct sample *s, const uint32_t *shown, size_t n, uint64_t *row)
{
    uint64_t sum = 0;
    for (size_t c = 0; c < n; c++) {
        row[c] = 0;
        for (size_t k = 0; k < s->n; k++)
            if (s->name[k] == shown[c])
                row[c] = s->bytes[k];
        sum += row[c];
    }
    row[n] = s->total > sum ? s->total - sum : 0;
}

static void csv_field(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

static void write_csv(const struct timeline *t, FILE *out)
{
    uint32_t shown[SHOWN_SITES];
    size_t n = shown_sites(t, shown);
    fputs("time_ms,total_bytes", out);
    for (size_t c = 0; c < n; c++) {
        fputc(',', out);
        csv_field(out, t->names[shown[c]]);
    }
    fputs(",other\n", out);
    uint64_t row[SHOWN_SITES + 1];
    for (size_t i = 0; i < t->count; i++) {
        sample_row(&t->samples[i], shown, n, row);
        fprintf(out, "%" PRIu64 ",%" PRIu64, t->samples[i].ms, t->samples[i].total);
        for (size_t c = 0; c <= n; c++)
            fprintf(out, ",%" PRIu64, row[c]);
        fputc('\n', out);
    }
}

/* --- the chart ---------------------------------------------------------------- */

enum { WIDTH = 1000, PLOT_LEFT = 90, PLOT_RIGHT = 970, PLOT_TOP = 60, PLOT_BOTTOM = 420, LEGEND_LINE = 18 };

/* A round step for about `ticks` divisions of `range`: 1, 2 or 5 times a
 * power of ten. */
static double nice_step(double range, int ticks)
{
    double raw = range / ticks, power = 1;
    while (power * 10 <= raw)
        power *= 10;
    while (power > raw)
        power /= 10;
    return raw <= power ? power : raw <= 2 * power ? 2 * power : raw <= 5 * power ? 5 * power : 10 * power;
}

/* "41.7 MB": decimal units, as heaptrack shows them. */
static void format_bytes(char *buf, size_t size, double bytes)
{
    static const char *const units[] = { "B", "kB", "MB", "GB", "TB" };
    size_t u = 0;
    while (bytes >= 1000 && u < 4) {
        bytes /= 1000;
        u++;
    }
    snprintf(buf, size, bytes < 10 && u ? "%.2f %s" : bytes < 100 && u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
}

/* An axis label in the unit of the axis's top, so all read alike: "5 MB". */
static void format_tick(char *buf, size_t size, double bytes, double top)
{
    static const char *const units[] = { "B", "kB", "MB", "GB", "TB" };
    size_t u = 0;
    double scale = 1;
    while (top >= 1000 * scale && u < 4) {
        scale *= 1000;
        u++;
    }
    snprintf(buf, size, "%g %s", bytes / scale, units[u]);
}

static void format_time(char *buf, size_t size, double ms, double step_ms)
{
    if (step_ms >= 1000)
        snprintf(buf, size, "%g s", ms / 1000);
    else
        snprintf(buf, size, "%g ms", ms);
}

/* Colours that stay apart, and grey for "other". */
static const char *const palette[SHOWN_SITES] = {
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
};

static void write_svg(const struct timeline *t, FILE *out, const char *title)
{
    uint32_t shown[SHOWN_SITES];
    size_t n = shown_sites(t, shown);
    uint64_t max_ms = t->samples[t->count - 1].ms, max_total = 0;
    size_t peak = 0;
    for (size_t i = 0; i < t->count; i++)
        if (t->samples[i].total > max_total) {
            max_total = t->samples[i].total;
            peak = i;
        }
    double y_step = nice_step(max_total ? (double)max_total : 1, 5), y_top = y_step;
    while (y_top < (double)max_total)
        y_top += y_step;
    double x_step = nice_step(max_ms ? (double)max_ms : 1, 8), x_end = x_step;
    while (x_end < (double)max_ms)
        x_end += x_step;
    double sx = (PLOT_RIGHT - PLOT_LEFT) / x_end, sy = (PLOT_BOTTOM - PLOT_TOP) / y_top;
    int height = PLOT_BOTTOM + 50 + (int)(n + 1) * LEGEND_LINE + 10;

    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\" "
                 "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n",
            WIDTH, height, WIDTH, height);
    fprintf(out, "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n<text x=\"%d\" y=\"24\" font-size=\"16\">",
            PLOT_LEFT);
    svg_text(out, title, 200);
    fputs("</text>\n", out);

    /* Axes, grid and ticks. */
    char label[64];
    for (double y = 0; y <= y_top + y_step / 2; y += y_step) {
        double py = PLOT_BOTTOM - y * sy;
        format_tick(label, sizeof label, y, y_top);
        fprintf(out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#dddddd\"/>"
                     "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                PLOT_LEFT, py, PLOT_RIGHT, py, PLOT_LEFT - 6, py + 4, label);
    }
    for (double x = 0; x <= x_end + x_step / 2; x += x_step) {
        double px = PLOT_LEFT + x * sx;
        format_time(label, sizeof label, x, x_step);
        fprintf(out, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#444444\"/>"
                     "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
                px, PLOT_BOTTOM, px, PLOT_BOTTOM + 5, px, PLOT_BOTTOM + 18, label);
    }
    fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">time since the start</text>\n",
            (PLOT_LEFT + PLOT_RIGHT) / 2, PLOT_BOTTOM + 36);
    fprintf(out, "<text transform=\"translate(18,%d) rotate(-90)\" text-anchor=\"middle\">live C heap</text>\n",
            (PLOT_TOP + PLOT_BOTTOM) / 2);

    /* The areas, stacked: the site that held the most at the bottom, then
     * each next one, "other" on top. Each is its upper edge forwards and
     * its lower edge back. */
    uint64_t (*rows)[SHOWN_SITES + 1] = calloc(t->count, sizeof *rows);
    if (rows) {
        for (size_t i = 0; i < t->count; i++)
            sample_row(&t->samples[i], shown, n, rows[i]);
        for (size_t c = 0; c <= n; c++) {
            fprintf(out, "<polygon fill=\"%s\" fill-opacity=\"0.85\" stroke=\"none\" points=\"",
                    c < n ? palette[c] : "#bab0ac");
            for (size_t i = 0; i < t->count; i++) {
                uint64_t upper = 0;
                for (size_t k = 0; k <= c; k++)
                    upper += rows[i][k];
                fprintf(out, "%.1f,%.1f ", PLOT_LEFT + (double)t->samples[i].ms * sx, PLOT_BOTTOM - (double)upper * sy);
            }
            for (size_t i = t->count; i-- > 0;) {
                uint64_t lower = 0;
                for (size_t k = 0; k < c; k++)
                    lower += rows[i][k];
                fprintf(out, "%.1f,%.1f ", PLOT_LEFT + (double)t->samples[i].ms * sx, PLOT_BOTTOM - (double)lower * sy);
            }
            fputs("\"><title>", out);
            svg_text(out, c < n ? t->names[shown[c]] : "other sites", 1000);
            fputs("</title></polygon>\n", out);
        }
        free(rows);
    }
    fprintf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#000000\"/>"
                 "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#000000\"/>\n",
            PLOT_LEFT, PLOT_TOP, PLOT_LEFT, PLOT_BOTTOM, PLOT_LEFT, PLOT_BOTTOM, PLOT_RIGHT, PLOT_BOTTOM);

    /* The peak: a dashed line and its figures. */
    double px = PLOT_LEFT + (double)t->samples[peak].ms * sx, py = PLOT_BOTTOM - (double)max_total * sy;
    char bytes_text[32];
    format_bytes(bytes_text, sizeof bytes_text, (double)max_total);
    fprintf(out, "<g id=\"peak\" data-bytes=\"%" PRIu64 "\" data-ms=\"%" PRIu64 "\">"
                 "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#c00000\" stroke-dasharray=\"4,3\"/>"
                 "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#c00000\"/>"
                 "<text x=\"%.1f\" y=\"%d\" fill=\"#c00000\" text-anchor=\"%s\">peak %s at %" PRIu64 " ms</text></g>\n",
            max_total, t->samples[peak].ms, px, PLOT_TOP - 6, px, PLOT_BOTTOM, px, py, px + (px > WIDTH / 2 ? -6 : 6),
            PLOT_TOP - 10, px > WIDTH / 2 ? "end" : "start", bytes_text, t->samples[peak].ms);

    /* The legend: each site's colour, its highest bytes, its name. */
    for (size_t c = 0; c <= n; c++) {
        int y = PLOT_BOTTOM + 56 + (int)c * LEGEND_LINE;
        if (c < n)
            format_bytes(bytes_text, sizeof bytes_text, (double)t->most[shown[c]]);
        fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                     "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text><text class=\"site\" x=\"%d\" y=\"%d\">",
                PLOT_LEFT, y - 10, c < n ? palette[c] : "#bab0ac", PLOT_LEFT + 84, y, c < n ? bytes_text : "",
                PLOT_LEFT + 92, y);
        svg_text(out, c < n ? t->names[shown[c]] : "other", 140);
        fputs("</text>\n", out);
    }
    fputs("</svg>\n", out);
}

bool timeline_output_named(const char *path)
{
    const char *dot = strrchr(path, '.');
    return dot && (strcmp(dot, ".svg") == 0 || strcmp(dot, ".csv") == 0);
}

int timeline_convert(FILE *raw, const char *raw_name, const char *output)
{
    const char *dot = output ? strrchr(output, '.') : NULL;
    bool svg = dot && strcmp(dot, ".svg") == 0;
    if (output && !timeline_output_named(output)) {
        fprintf(stderr, "memprof: timeline: %s: name it FILE.svg (a chart) or FILE.csv (the series)\n", output);
        return 2;
    }
    static struct timeline t;
    memset(&t, 0, sizeof t);
    int rc = timeline_read(raw, raw_name, &t);
    struct output out;
    if (!rc && !(rc = output_open(&out, output))) {
        if (svg) {
            char title[128];
            snprintf(title, sizeof title, "memprof: live C heap over time, pid %ld, by the sites that held the most",
                     t.pid);
            write_svg(&t, out.fp, title);
        } else {
            write_csv(&t, out.fp);
        }
        rc = output_close(&out, ferror(out.fp) != 0);
    }
    timeline_free(&t);
    return rc;
}
