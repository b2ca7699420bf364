/* Stacks as speedscope's JSON file format (its file-format-schema.json): one
 * "sampled" profile whose samples are the rows' stacks, root first, weighed
 * in bytes or objects; each distinct frame once in shared.frames, with its
 * file and line when the frame names them ("function file:line (object)",
 * a Ruby "file:line"). */
#include "speedscope.h"
#include "../json.h"
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* "name file:line (object)", "name file:line" or "file:line": the file and
 * line, and how much of the text is the name (all of it for "file:line"). */
static bool frame_place(const char *frame, size_t len, size_t *name_len, const char **file, size_t *file_len,
                        unsigned long *line)
{
    size_t end = len;
    if (end && frame[end - 1] == ')') {   /* " (object)" */
        const char *open = NULL;
        for (size_t i = end; i-- > 0;)
            if (frame[i] == '(' && i > 0 && frame[i - 1] == ' ') {
                open = frame + i - 1;
                break;
            }
        if (open)
            end = (size_t)(open - frame);
    }
    size_t start = end;
    while (start > 0 && frame[start - 1] != ' ')
        start--;
    const char *colon = NULL;
    for (size_t i = start; i < end; i++)
        if (frame[i] == ':')
            colon = frame + i;
    if (!colon || colon == frame + start || colon + 1 == frame + end)
        return false;
    char *stop;
    *line = strtoul(colon + 1, &stop, 10);
    if (stop != frame + end)
        return false;
    *file = frame + start;
    *file_len = (size_t)(colon - (frame + start));
    *name_len = start ? start - 1 : len;
    return true;
}

struct frame_table {
    struct { const char *text; size_t len; size_t index; } *slots;
    size_t capacity, count;
    const char **order;   /* text by index */
    size_t *lengths;
};

static uint64_t hash_text(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

/* The frame's index (SIZE_MAX when memory runs out). */
static size_t frame_index(struct frame_table *t, const char *text, size_t len)
{
    if (t->count * 2 >= t->capacity) {
        size_t capacity = t->capacity ? t->capacity * 2 : 1024;
        void *slots = calloc(capacity, sizeof *t->slots);
        const char **order = realloc(t->order, capacity * sizeof *order);
        if (order)
            t->order = order;
        size_t *lengths = realloc(t->lengths, capacity * sizeof *lengths);
        if (lengths)
            t->lengths = lengths;
        if (!slots || !order || !lengths) {
            free(slots);
            return SIZE_MAX;
        }
        for (size_t i = 0; i < t->capacity; i++) {
            if (!t->slots[i].text)
                continue;
            size_t h = hash_text(t->slots[i].text, t->slots[i].len) & (capacity - 1);
            while (((__typeof__(t->slots))slots)[h].text)
                h = (h + 1) & (capacity - 1);
            ((__typeof__(t->slots))slots)[h] = t->slots[i];
        }
        free(t->slots);
        t->slots = slots;
        t->capacity = capacity;
    }
    size_t h = hash_text(text, len) & (t->capacity - 1);
    while (t->slots[h].text) {
        if (t->slots[h].len == len && memcmp(t->slots[h].text, text, len) == 0)
            return t->slots[h].index;
        h = (h + 1) & (t->capacity - 1);
    }
    t->slots[h].text = text;
    t->slots[h].len = len;
    t->slots[h].index = t->count;
    t->order[t->count] = text;
    t->lengths[t->count] = len;
    return t->count++;
}

int speedscope_write(const struct stacks *s, FILE *out, const char *name, bool by_bytes, const char *exporter)
{
    struct frame_table t = { 0 };
    /* Each row's frame indices, root first, into one array; -1 ends a row. */
    size_t cap = 1024, n = 0;
    long *stack = malloc(cap * sizeof *stack);
    bool ok = stack != NULL;
    uint64_t sum = 0;
    for (size_t r = 0; ok && r < s->count; r++) {
        const char *p = s->rows[r].frames;
        for (;;) {
            size_t len = strcspn(p, ";");
            size_t index = frame_index(&t, p, len);
            if (index == SIZE_MAX || (n + 2 > cap && !(stack = realloc(stack, (cap *= 2) * sizeof *stack)))) {
                ok = false;
                break;
            }
            stack[n++] = (long)index;
            if (!p[len])
                break;
            p += len + 1;
        }
        if (ok)
            stack[n++] = -1;
        sum += by_bytes ? s->rows[r].bytes : s->rows[r].count;
    }
    if (ok) {
        fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"shared\":{\"frames\":[", out);
        for (size_t i = 0; i < t.count; i++) {
            size_t name_len, file_len;
            const char *file;
            unsigned long line;
            bool placed = frame_place(t.order[i], t.lengths[i], &name_len, &file, &file_len, &line);
            fputs(i ? ",{\"name\":" : "{\"name\":", out);
            json_string(out, t.order[i], placed ? name_len : t.lengths[i]);
            if (placed) {
                fputs(",\"file\":", out);
                json_string(out, file, file_len);
                fprintf(out, ",\"line\":%lu", line);
            }
            fputc('}', out);
        }
        fputs("]},\"profiles\":[{\"type\":\"sampled\",\"name\":", out);
        json_string(out, name, strlen(name));
        fprintf(out, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%" PRIu64 ",\"samples\":[", by_bytes ? "bytes" : "none",
                sum);
        bool row_start = true, first_row = true;
        for (size_t i = 0; i < n; i++) {
            if (stack[i] < 0) {
                fputc(']', out);
                row_start = true;
                continue;
            }
            if (row_start)
                fputs(first_row ? "[" : ",[", out);
            else
                fputc(',', out);
            fprintf(out, "%ld", stack[i]);
            row_start = first_row = false;
        }
        fputs("],\"weights\":[", out);
        for (size_t r = 0; r < s->count; r++)
            fprintf(out, r ? ",%" PRIu64 : "%" PRIu64, by_bytes ? s->rows[r].bytes : s->rows[r].count);
        fputs("]}],\"name\":", out);
        json_string(out, name, strlen(name));
        fputs(",\"activeProfileIndex\":0,\"exporter\":", out);
        json_string(out, exporter, strlen(exporter));
        fputs("}\n", out);
    }
    free(stack);
    free(t.slots);
    free(t.order);
    free(t.lengths);
    return ok ? 0 : -1;
}
