/* An SVG flame graph from stacks (stacks.h), written by memprof itself: one
 * box per frame, as wide as the bytes (or objects) allocated under it and
 * still alive, callers below their callees, the outermost frame at the
 * bottom; frames of a level in name order; each box has a tooltip with its
 * figures. Plain SVG 1.1, no script: it opens in any browser. */
#include "flamegraph.h"
#include "svg.h"
#include "../grow.h"
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct node {
    char *name;
    uint64_t weight;
    struct node *children;
    size_t count, cap;
};

static struct node *child(struct node *parent, const char *name, size_t len)
{
    /* Inputs sorted by frames add to the last child: look there first. */
    for (size_t i = parent->count; i-- > 0;) {
        struct node *c = &parent->children[i];
        if (strlen(c->name) == len && memcmp(c->name, name, len) == 0)
            return c;
    }
    struct node *children = grow_array(parent->children, parent->count, &parent->cap, sizeof *children, 4);
    if (!children)
        return NULL;
    parent->children = children;
    struct node *c = &parent->children[parent->count];
    *c = (struct node){ .name = strndup(name, len) };
    if (!c->name)
        return NULL;
    parent->count++;
    return c;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct node *)a)->name, ((const struct node *)b)->name);
}

static int depth_of(struct node *n)
{
    int deepest = 0;
    qsort(n->children, n->count, sizeof *n->children, by_name);
    for (size_t i = 0; i < n->count; i++) {
        int d = depth_of(&n->children[i]);
        if (d > deepest)
            deepest = d;
    }
    return deepest + 1;
}

static void free_node(struct node *n)
{
    for (size_t i = 0; i < n->count; i++)
        free_node(&n->children[i]);
    free(n->children);
    free(n->name);
}

struct layout {
    FILE *out;
    uint64_t total;
    double width;           /* of the drawing area, pixels */
    int height;             /* of the whole picture */
    const char *unit;       /* "bytes" or "objects" */
};

enum { FRAME_HEIGHT = 16, MARGIN = 10, TOP = 40, CHAR_WIDTH = 7 };

/* The same name gives the same warm colour. */
static void colour(const char *name, int *r, int *g, int *b)
{
    uint32_t h = 2166136261u;
    for (const char *p = name; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    *r = 205 + (int)(h % 50);
    *g = 80 + (int)((h >> 8) % 130);
    *b = 40 + (int)((h >> 16) % 50);
}

static void draw(const struct layout *l, const struct node *n, double x, int level)
{
    double w = l->total ? (double)n->weight * l->width / (double)l->total : 0;
    if (w < 0.1)
        return;
    double y = l->height - MARGIN - (level + 1) * FRAME_HEIGHT;
    int r, g, b;
    colour(n->name, &r, &g, &b);
    fputs("<g><title>", l->out);
    svg_text(l->out, n->name, (size_t)-1);
    fprintf(l->out, " (%" PRIu64 " %s, %.2f%%)</title>", n->weight, l->unit,
            l->total ? 100.0 * (double)n->weight / (double)l->total : 0.0);
    fprintf(l->out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"rgb(%d,%d,%d)\" rx=\"2\"/>",
            MARGIN + x, y, w, FRAME_HEIGHT - 1, r, g, b);
    size_t fits = w > 6 ? (size_t)((w - 6) / CHAR_WIDTH) : 0;
    if (fits >= 3) {
        size_t len = strlen(n->name);
        fprintf(l->out, "<text x=\"%.1f\" y=\"%.1f\">", MARGIN + x + 3, y + 11.5);
        if (len <= fits) {
            svg_text(l->out, n->name, len);
        } else {
            svg_text(l->out, n->name, fits - 2);
            fputs("..", l->out);
        }
        fputs("</text>", l->out);
    }
    fputs("</g>\n", l->out);
    double at = x;
    for (size_t i = 0; i < n->count; i++) {
        draw(l, &n->children[i], at, level + 1);
        at += l->total ? (double)n->children[i].weight * l->width / (double)l->total : 0;
    }
}

int flamegraph_write(const struct stacks *s, FILE *out, const char *title, bool by_bytes)
{
    struct node root = { .name = strdup("all") };
    if (!root.name)
        return -1;
    for (size_t i = 0; i < s->count; i++) {
        uint64_t weight = by_bytes ? s->rows[i].bytes : s->rows[i].count;
        if (!weight)
            continue;
        struct node *n = &root;
        root.weight += weight;
        for (const char *f = s->rows[i].frames; n && f;) {
            const char *end = strchr(f, ';');
            size_t len = end ? (size_t)(end - f) : strlen(f);
            if ((n = child(n, f, len)))
                n->weight += weight;
            f = end ? end + 1 : NULL;
        }
        if (!n) {
            free_node(&root);
            return -1;
        }
    }
    int depth = depth_of(&root);
    struct layout l = { out, root.weight, 1180, TOP + depth * FRAME_HEIGHT + 2 * MARGIN,
                        by_bytes ? "bytes" : "objects" };
    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
                 "<svg version=\"1.1\" width=\"1200\" height=\"%d\" viewBox=\"0 0 1200 %d\" "
                 "xmlns=\"http://www.w3.org/2000/svg\">\n"
                 "<style>text { font-family: monospace; font-size: 12px; fill: #000; }</style>\n"
                 "<rect x=\"0\" y=\"0\" width=\"1200\" height=\"%d\" fill=\"#fbfbf4\"/>\n"
                 "<text x=\"600\" y=\"24\" text-anchor=\"middle\" style=\"font-size: 17px\">",
            l.height, l.height, l.height);
    svg_text(out, title, (size_t)-1);
    fprintf(out, " (%" PRIu64 " %s live)</text>\n", root.weight, l.unit);
    draw(&l, &root, 0, 0);
    fputs("</svg>\n", out);
    free_node(&root);
    return ferror(out) ? -1 : 0;
}
