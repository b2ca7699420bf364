/* memprof's reports as pprof profiles (pprof.h).
 *
 * The C heap from the runtime's raw report: each return address becomes a
 * location of its object's mapping (its load base from the address and the
 * offset the runtime wrote, its extent and build-id from the file), named
 * here with its inlined functions as lines, innermost first, as
 * profile.proto wants them; the Ruby line the allocation ran under is the
 * outermost frame. Ruby's objects from their table, dump or collapsed
 * stacks: a "file:line" frame is a function of that name in that file, and
 * the class is the sample's "class" label. */
#include "../commands.h"
#include "../report/heap_raw.h"
#include "pprof.h"
#include "../report/ruby_groups.h"
#include "objfile/debugfile.h"
#include "objfile/symbolizer.h"
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_OBJECTS 64
#define MAX_STACK 512

struct object {
    char path[PATH_MAX];
    struct symbolizer *s;   /* NULL: not ELF, or unreadable */
    uint64_t mapping;
};

struct objects {
    struct object items[MAX_OBJECTS];
    size_t count;
};

/* The object at `path`, its mapping made from the first address seen in it. */
static struct object *object_for(struct pprof *p, struct objects *o, const char *path, uint64_t base)
{
    for (size_t i = 0; i < o->count; i++)
        if (strcmp(o->items[i].path, path) == 0)
            return &o->items[i];
    if (o->count == MAX_OBJECTS)
        return NULL;
    struct object *obj = &o->items[o->count++];
    snprintf(obj->path, sizeof obj->path, "%s", path);
    char err[PATH_MAX + 128], build_id[81] = "";
    uint64_t extent = 0;
    obj->s = symbolizer_open(path, err, sizeof err);
    elf_file_extent(path, build_id, sizeof build_id, &extent);
    obj->mapping = pprof_mapping(p, base, base + (extent ? extent : 1), path, build_id);
    return obj;
}

/* "file:line" split at its last colon; false when it is not that shape. */
static bool split_file_line(const char *text, char *file, size_t size, int64_t *line)
{
    const char *colon = strrchr(text, ':');
    char *end;
    if (!colon || colon == text || !colon[1])
        return false;
    long long n = strtoll(colon + 1, &end, 10);
    if (*end)
        return false;
    snprintf(file, size, "%.*s", (int)(colon - text), text);
    *line = n;
    return true;
}

/* A Ruby "file:line" frame's location (0 when memory runs out). */
static uint64_t ruby_location(struct pprof *p, const char *frame)
{
    char file[PATH_MAX];
    int64_t line = 0;
    uint64_t function = split_file_line(frame, file, sizeof file, &line) ? pprof_function(p, frame, NULL, file)
                                                                          : pprof_function(p, frame, NULL, NULL);
    struct pprof_line l = { function, line };
    return function ? pprof_location(p, 0, 0, &l, 1) : 0;
}

/* A return address's location: its lines, innermost first. */
static uint64_t c_location(struct pprof *p, struct objects *objects, const struct raw_frame *f)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", f->object);
    char *plus = strrchr(path, '+');
    uint64_t offset = 0;
    if (plus && sscanf(plus + 1, "%" SCNx64, &offset) == 1 && offset && offset <= f->site)
        *plus = '\0';
    else
        offset = 0;
    struct object *obj = offset ? object_for(p, objects, path, f->site - offset) : NULL;
    struct symbol_info info[SYMBOLIZER_MAX_INLINED];
    size_t n = obj && obj->s ? symbolizer_frames(obj->s, offset - 1, info, SYMBOLIZER_MAX_INLINED) : 0;
    struct pprof_line lines[SYMBOLIZER_MAX_INLINED];
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (!info[i].function)
            continue;
        char *mangled = strdup(info[i].function);
        uint64_t function = mangled ? pprof_function(p, demangle(mangled), mangled, info[i].file) : 0;
        free(mangled);
        if (!function)
            return 0;
        lines[kept++] = (struct pprof_line){ function, info[i].file ? info[i].line : 0 };
    }
    /* The address of the call (a return address points past it). */
    return pprof_location(p, obj ? obj->mapping : 0, f->site - 1, lines, kept);
}

int heap_report_proto(FILE *raw, FILE *out, char *why, size_t why_size)
{
    struct raw_report report;
    if (heap_raw_read(raw, &report) != 0) {
        snprintf(why, why_size, "out of memory reading the heap report");
        return -1;
    }
    struct pprof *p = pprof_new(PPROF_VALUES);
    static struct objects objects;
    objects.count = 0;
    bool ok = p != NULL;
    char comment[160];
    snprintf(comment, sizeof comment, "memprof: live C heap blocks %s pid %ld", report.when[0] ? report.when : "of",
             report.pid);
    ok = ok && pprof_comment(p, comment);
    if (ok && report.sample) {
        snprintf(comment, sizeof comment,
                 "memprof: sampled, an allocation per %" PRIu64 " bytes on average: figures are estimates",
                 report.sample);
        ok = pprof_comment(p, comment);
    }
    for (size_t r = 0; ok && r < report.count; r++) {
        const struct raw_row *row = &report.rows[r];
        uint64_t locations[MAX_STACK];
        size_t n = 0;
        for (size_t i = 0; ok && i < row->raw_count && n < MAX_STACK; i++)
            ok = (locations[n++] = c_location(p, &objects, &row->raw[i])) != 0;
        if (ok && row->ruby && n < MAX_STACK)
            ok = (locations[n++] = ruby_location(p, row->ruby)) != 0;
        int64_t values[PPROF_VALUES] = {
            [PPROF_INUSE_OBJECTS] = (int64_t)row->count, [PPROF_INUSE_SPACE] = (int64_t)row->bytes,
            [PPROF_ALLOC_OBJECTS] = (int64_t)row->allocs, [PPROF_ALLOC_SPACE] = (int64_t)row->total_bytes,
        };
        char thread[64];
        const char *labels[2] = { "thread", thread };
        size_t label_pairs = 0;
        for (size_t t = 0; row->thread && t < report.thread_count; t++)
            if (report.threads[t].serial == row->thread) {
                snprintf(thread, sizeof thread, "%u %s", row->thread, report.threads[t].name);
                label_pairs = 1;
            }
        ok = ok && pprof_sample(p, locations, n, values, labels, label_pairs);
    }
    int rc = ok ? pprof_write(p, out, why, why_size) : -1;
    if (!ok)
        snprintf(why, why_size, "out of memory for the profile");
    pprof_free(p);
    for (size_t i = 0; i < objects.count; i++)
        symbolizer_close(objects.items[i].s);
    heap_raw_free(&report);
    return rc;
}

int stacks_proto(const struct stacks *s, FILE *out, char *why, size_t why_size)
{
    /* Ruby's table and dump end each stack with the class. */
    bool ruby = strcmp(s->kind, "ruby") == 0 || strcmp(s->kind, "dump") == 0;
    /* alloc_objects after inuse_space: a table with both columns. */
    bool allocated = s->have_allocated && s->have_bytes;
    struct pprof *p = pprof_new(allocated ? 3 : s->have_bytes ? 2 : 1);
    char here[PATH_MAX];
    const char *app = getcwd(here, sizeof here);   /* the program's own files: the gem "app" */
    bool ok = p != NULL;
    for (size_t r = 0; ok && r < s->count; r++) {
        char *frames = strdup(s->rows[r].frames), *klass = NULL;
        char *parts[MAX_STACK];
        size_t n = 0;
        ok = frames != NULL;
        for (char *f = frames, *next; ok && f && n < MAX_STACK; f = next) {
            next = strchr(f, ';');
            if (next)
                *next++ = '\0';
            parts[n++] = f;
        }
        if (ruby && n > 1)
            klass = parts[--n];
        uint64_t locations[MAX_STACK];
        for (size_t i = 0; ok && i < n; i++) {   /* leaf first */
            const char *frame = parts[n - 1 - i];
            if (ruby) {
                locations[i] = ruby_location(p, frame);
            } else {
                struct pprof_line l = { pprof_function(p, frame, NULL, NULL), 0 };
                locations[i] = l.function ? pprof_location(p, 0, 0, &l, 1) : 0;
            }
            ok = locations[i] != 0;
        }
        int64_t values[3] = { (int64_t)s->rows[r].count, (int64_t)s->rows[r].bytes,
                              (int64_t)s->rows[r].allocated };
        /* A Ruby row's class, and the gem of its innermost line's file. */
        char *gem = NULL;
        if (ruby && n) {
            const char *leaf = parts[n - 1], *colon = strrchr(leaf, ':');
            char *file = strndup(leaf, colon ? (size_t)(colon - leaf) : strlen(leaf));
            gem = file ? ruby_gem_of(file, app) : NULL;
            free(file);
        }
        const char *labels[4] = { "class", klass, "gem", gem };
        size_t pairs = 0;
        if (klass)
            pairs++;
        if (gem) {
            labels[2 * pairs] = "gem";
            labels[2 * pairs + 1] = gem;
            pairs++;
        }
        ok = ok && pprof_sample(p, locations, n, values, labels, pairs);
        free(gem);
        free(frames);
    }
    int rc = ok ? pprof_write(p, out, why, why_size) : -1;
    if (!ok)
        snprintf(why, why_size, "out of memory for the profile");
    pprof_free(p);
    return rc;
}
