/* The Ruby tracer's tables read from a core (core_image.h): the live objects
 * by file:line:Class, as the runtime's report writes them (trace/ruby_report.c).
 * No VM can be asked: an object counts as live when its slot still holds the
 * type it was recorded with and its class (or a singleton class of it), and
 * each class is named by the name the runtime kept when it first saw it.
 * doc/tables.md says how the tables are read. */
#include "core_image.h"
#include "../json.h"
#include "trace/ruby/ruby_abi.h"
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PAGES (UINT64_C(1) << 24)
#define MAX_SLOTS_PER_PAGE 65536
#define MAX_DEPTH 64                      /* RUBY_MAX_FRAMES */
#define SINGLETON_ROW 0x100u              /* a row of singleton classes */
#define REAL_CLASS_BITS 10                /* real_class's answers kept: 1024 */


/* The tracer's tables, copied out of the core and checked. */
struct ruby_tables {
    struct core_sites sites;
    char *class_names, *hidden;
    uint64_t class_names_len, hidden_len;
    struct core_pair *origins;            /* (site, class) */
    uint64_t origin_count;
    uint32_t *origin_names;               /* [origin]: name offset + 1, 0 none */
    uint64_t origin_name_count;
    struct core_pair *named;                   /* (class, name offset + 1), by class */
    size_t named_count;
    uint32_t sample;
    uint64_t dropped;
    uint64_t *epoch_gc;                   /* [epoch]: the GC generation it began in */
    uint64_t epoch_count;
    uint64_t page_size, slot_size, slots_per_page, pages, page_mask, count;
    struct core_pair *real_classes;       /* [1 << REAL_CLASS_BITS]: (klass, its real class), each chain read once */
};

struct live {
    uint32_t site, type, name;            /* name: offset + 1 in class_names, 0 none */
    uint64_t klass;
};

struct row {
    struct live key;
    uint64_t count;
    char *text;                           /* "file:line:Class" */
};

static size_t real_class_slot(uint64_t klass)
{
    return (size_t)((klass >> 3) * UINT64_C(0x9E3779B97F4A7C15) >> (64 - REAL_CLASS_BITS));
}

static void free_tables(struct ruby_tables *r)
{
    core_sites_free(&r->sites);
    free(r->class_names);
    free(r->hidden);
    free(r->origins);
    free(r->origin_names);
    free(r->named);
    free(r->epoch_gc);
    free(r->real_classes);
}

static int by_class(const void *x, const void *y)
{
    const struct core_pair *a = x, *b = y;
    return a->a < b->a ? -1 : a->a > b->a;
}

/* Every class the runtime named, by class: to name an object whose class
 * is not its origin's (one made hidden and given its class later). */
static bool index_names(struct core_image *c, struct ruby_tables *r)
{
    if (!(r->named = malloc((r->origin_name_count + 1) * sizeof *r->named)))
        return core_fail(c, "out of memory");
    for (uint64_t i = 0; i < r->origin_name_count && i < r->origin_count; i++)
        if (r->origin_names[i] && r->origins[i].b)
            r->named[r->named_count++] = (struct core_pair){ r->origins[i].b, r->origin_names[i] };
    qsort(r->named, r->named_count, sizeof *r->named, by_class);
    return true;
}

static uint32_t class_name(const struct ruby_tables *r, uint64_t klass)
{
    struct core_pair key = { klass, 0 };
    const struct core_pair *found = bsearch(&key, r->named, r->named_count, sizeof *r->named, by_class);
    return found ? (uint32_t)found->b : 0;
}

/* Every reference inside the tables points inside them. */
static bool check_tables(struct core_image *c, const struct ruby_tables *r)
{
    for (uint64_t i = 0; i < r->origin_count; i++)
        if (r->origins[i].a >= r->sites.count)
            return core_fail(c, "%s: Ruby origin %" PRIu64 " names no site: damaged", c->path, i);
    for (uint64_t i = 0; i < r->origin_name_count; i++)
        if (r->origin_names[i] > r->class_names_len)
            return core_fail(c, "%s: Ruby origin %" PRIu64 "'s class name is outside the names: damaged", c->path, i);
    return true;
}

static bool read_tables(struct core_image *c, struct ruby_tables *r)
{
    const struct memprof_tables *t = &c->tables;
    memset(r, 0, sizeof *r);
    unsigned char *tracer = malloc(t->ruby_tracer_size);
    if (!tracer || !(r->real_classes = calloc((size_t)1 << REAL_CLASS_BITS, sizeof *r->real_classes))) {
        free(tracer);
        return core_fail(c, "out of memory");
    }
    bool ok = core_read(c, t->ruby_tracer, tracer, t->ruby_tracer_size, "the Ruby tracer");
    if (ok) {
        const unsigned char *map = tracer + t->ruby_objects;
        r->page_size = core_field_u64(map, t->map_page_size);
        r->slot_size = core_field_u64(map, t->map_slot_size);
        r->slots_per_page = core_field_u64(map, t->map_slots_per_page);
        r->pages = core_field_u64(map, t->map_pages);
        r->page_mask = core_field_u64(map, t->map_page_mask);
        r->count = core_field_u64(map, t->map_count);
        memcpy(&r->sample, tracer + t->ruby_sample, 4);
        r->dropped = core_field_u64(tracer, t->ruby_dropped);
        r->hidden_len = core_field_u64(tracer, t->ruby_hidden_len);
        uint64_t names_at = core_field_u64(tracer, t->ruby_origin_names);
        uint64_t epochs_at = core_field_u64(tracer, t->ruby_epoch_gc);
        r->epoch_count = core_field_u64(tracer, t->ruby_epoch_gc_bytes) / 8;
        r->origin_name_count = core_field_u64(tracer, t->ruby_origin_names_bytes) / 4;
        if (r->page_size & (r->page_size - 1) || r->page_size > (1u << 24) || !r->slot_size ||
            r->slot_size > r->page_size || r->slots_per_page > MAX_SLOTS_PER_PAGE ||
            (r->pages && r->page_mask >= MAX_PAGES) || r->hidden_len >= t->ruby_tracer_size - t->ruby_hidden_files ||
            r->origin_name_count > CORE_MAX_TUPLES || r->epoch_count > (UINT64_C(1) << 24))
            ok = core_fail(c, "%s: the Ruby tracer's tables are damaged", c->path);
        else if (!(r->hidden = malloc(r->hidden_len + 1)) ||
                 !(r->origin_names = calloc(r->origin_name_count + 1, sizeof *r->origin_names)) ||
                 !(r->epoch_gc = calloc(r->epoch_count + 1, sizeof *r->epoch_gc)))
            ok = core_fail(c, "out of memory");
        if (ok) {
            memcpy(r->hidden, tracer + t->ruby_hidden_files, r->hidden_len);
            r->hidden[r->hidden_len] = '\0';
        }
        ok = ok && (!names_at || !r->origin_name_count ||
                    core_read(c, names_at, r->origin_names, r->origin_name_count * 4, "the Ruby classes' names"));
        ok = ok && (!epochs_at || !r->epoch_count ||
                    core_read(c, epochs_at, r->epoch_gc, r->epoch_count * 8, "the Ruby epochs"));
        if (!epochs_at)
            r->epoch_count = 0;
        ok = ok && core_read_sites(c, tracer + t->ruby_sites, &r->sites, "the Ruby sites") &&
             core_read_pool(c, tracer + t->ruby_class_names, &r->class_names, &r->class_names_len, "the Ruby classes") &&
             core_read_tuples(c, tracer + t->ruby_origins, &r->origins, &r->origin_count, "the Ruby origins") &&
             check_tables(c, r) && index_names(c, r);
    }
    free(tracer);
    return ok;
}

bool core_has_ruby(struct core_image *c)
{
    const struct memprof_tables *t = &c->tables;
    uint64_t page_size;
    return core_read_u64(c, t->ruby_tracer + t->ruby_objects + t->map_page_size, &page_size, "the Ruby tracer") &&
           page_size != 0;
}

/* The class an object's klass word stands for: past singleton classes and
 * included modules, as rb_class_real; 0 when the chain cannot be read.
 * Every class on the way keeps the answer: a class's singleton class leads
 * to its superclass's, which the others share. */
static uint64_t real_class(struct core_image *c, const struct ruby_tables *r, uint64_t klass)
{
    uint64_t walked[MAX_DEPTH], real = 0;
    int depth = 0;
    while (klass && depth < MAX_DEPTH) {
        const struct core_pair *kept = &r->real_classes[real_class_slot(klass)];
        if (kept->a == klass) {
            real = kept->b;
            break;
        }
        walked[depth++] = klass;
        struct ruby_basic b;
        if ((klass & 7) || !core_peek(c, klass, &b, sizeof b))
            break;
        unsigned type = (unsigned)(b.flags & RUBY_T_MASK);
        if (type != RUBY_T_ICLASS && !(type == RUBY_T_CLASS && (b.flags & RUBY_FL_SINGLETON))) {
            real = klass;
            break;
        }
        if (!core_peek(c, klass + RUBY_CLASS_SUPER_OFFSET, &klass, sizeof klass))
            break;
    }
    for (int i = 0; i < depth; i++)
        r->real_classes[real_class_slot(walked[i])] = (struct core_pair){ walked[i], real };
    return real;
}

/* Is the object recorded at `addr` still there? Its row's key if so.
 * `basic`: its header as read with its page, or NULL to read it here. */
static bool object_live(struct core_image *c, const struct ruby_tables *r, uint64_t addr,
                        const struct ruby_basic *basic, uint32_t origin, uint32_t aux, struct live *out)
{
    const struct memprof_tables *t = &c->tables;
    struct ruby_basic b;
    unsigned type = aux & t->aux_type_mask;
    if (basic)
        b = *basic;
    else if (!core_peek(c, addr, &b, sizeof b))
        return false;   /* not dumped: not counted */
    if ((b.flags & RUBY_T_MASK) != type)
        return false;
    uint64_t recorded = r->origins[origin].b, klass = b.klass;
    if (type == RUBY_T_IMEMO) {
        klass = 0;
    } else if (klass != recorded && klass != 0) {
        klass = real_class(c, r, klass);
        if (!klass || (recorded && klass != recorded))
            return false;
    }
    *out = (struct live){
        .site = (uint32_t)r->origins[origin].a,
        .type = type | (type == RUBY_T_CLASS && (b.flags & RUBY_FL_SINGLETON) ? SINGLETON_ROW : 0),
        .name = klass == recorded && origin < r->origin_name_count ? r->origin_names[origin] : class_name(r, klass),
        .klass = klass,
    };
    return true;
}

/* The address of slot `i` of the page at `base` (store/slot_map.c): the one
 * multiple of the slot size in [base + i * size, + size). */
static uint64_t slot_address(const struct ruby_tables *r, uint64_t base, uint64_t i)
{
    uint64_t lo = base + i * r->slot_size;
    return lo + (r->slot_size - lo % r->slot_size) % r->slot_size;
}

typedef bool record_fn(struct core_image *c, const struct ruby_tables *r, uint64_t addr,
                       const struct ruby_basic *basic, uint32_t origin, uint32_t aux, void *ctx);

/* Call `fn` for each record: its address, its object's header (NULL when it
 * must be read alone), origin and aux. A page's objects are read at once: a
 * running process is read a system call a page, not one an object. */
static bool each_record(struct core_image *c, const struct ruby_tables *r, record_fn *fn, void *ctx)
{
    const struct memprof_tables *t = &c->tables;
    if (!r->pages)
        return true;
    uint64_t buckets = r->page_mask + 1;
    /* From the first slot to the end of the last one's header, or of the
     * page (whose alignment leaves room for one slot fewer). */
    uint64_t span = r->slots_per_page ? (r->slots_per_page - 1) * r->slot_size + sizeof(struct ruby_basic) : 0;
    unsigned char *pages = malloc(buckets * t->page_size);
    unsigned char *records = malloc(r->slots_per_page * t->record_size + 1);
    unsigned char *objects = span && span <= 2 * r->page_size ? malloc(span) : NULL;
    bool ok = pages && records ? core_read(c, r->pages, pages, buckets * t->page_size, "the Ruby heap pages")
                               : core_fail(c, "out of memory");
    for (uint64_t p = 0; ok && p < buckets; p++) {
        uint64_t base = core_field_u64(pages + p * t->page_size, t->page_base);
        if (!base)
            continue;
        uint64_t at = core_field_u64(pages + p * t->page_size, t->page_records);
        if (!(ok = core_read(c, at, records, r->slots_per_page * t->record_size, "a Ruby page's records")))
            break;
        uint64_t first = slot_address(r, base, 0);
        uint64_t room = first - base < r->page_size ? r->page_size - (first - base) : 0;
        uint64_t held = span < room ? span : room;
        bool read = objects && core_peek(c, first, objects, held);
        for (uint64_t s = 0; ok && s < r->slots_per_page; s++) {
            uint32_t origin_plus_one, aux;
            memcpy(&origin_plus_one, records + s * t->record_size + t->record_origin, 4);
            memcpy(&aux, records + s * t->record_size + t->record_aux, 4);
            if (!origin_plus_one)
                continue;
            if (origin_plus_one - 1 >= r->origin_count) {
                ok = core_fail(c, "%s: a Ruby record names origin %u of %" PRIu64 ": damaged", c->path,
                               origin_plus_one - 1, r->origin_count);
            } else {
                uint64_t addr = slot_address(r, base, s);
                struct ruby_basic b;
                bool in_read = read && addr - first + sizeof b <= held;
                if (in_read)
                    memcpy(&b, objects + (addr - first), sizeof b);
                ok = fn(c, r, addr, in_read ? &b : NULL, origin_plus_one - 1, aux, ctx);
            }
        }
    }
    free(pages);
    free(records);
    free(objects);
    return ok;
}

struct tally {
    struct live *live;
    size_t count, cap;
};

static bool tally_one(struct core_image *c, const struct ruby_tables *r, uint64_t addr,
                      const struct ruby_basic *basic, uint32_t origin, uint32_t aux, void *ctx)
{
    struct tally *y = ctx;
    struct live l;
    if (!object_live(c, r, addr, basic, origin, aux, &l))
        return true;
    if (y->count == y->cap) {
        y->cap = y->cap ? y->cap * 2 : 4096;
        struct live *grown = realloc(y->live, y->cap * sizeof *grown);
        if (!grown)
            return core_fail(c, "out of memory");
        y->live = grown;
    }
    y->live[y->count++] = l;
    return true;
}

static int by_key(const void *x, const void *y)
{
    const struct live *a = x, *b = y;
    if (a->site != b->site)
        return a->site < b->site ? -1 : 1;
    if (a->type != b->type)
        return a->type < b->type ? -1 : 1;
    if (a->klass != b->klass)
        return a->klass < b->klass ? -1 : 1;
    return a->name < b->name ? 1 : a->name > b->name ? -1 : 0;   /* a named one first */
}

/* By file, line, then callers (store/sites.c's order). */
static int sites_compare(const struct ruby_tables *r, uint32_t a, uint32_t b)
{
    for (int depth = 0; a != b && depth <= MAX_DEPTH; depth++) {
        if (a == CORE_SITE_NONE || b == CORE_SITE_NONE)
            return a == CORE_SITE_NONE ? -1 : 1;
        int c = strcmp(core_site_file(&r->sites, a), core_site_file(&r->sites, b));
        if (c)
            return c;
        if (core_site_line(&r->sites, a) != core_site_line(&r->sites, b))
            return core_site_line(&r->sites, a) < core_site_line(&r->sites, b) ? -1 : 1;
        a = core_site_caller(&r->sites, a);
        b = core_site_caller(&r->sites, b);
    }
    return 0;
}

static const struct ruby_tables *sorting;

static int by_count(const void *x, const void *y)
{
    const struct row *a = x, *b = y;
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    int c = sites_compare(sorting, a->key.site, b->key.site);
    return c ? c : strcmp(a->text, b->text);
}

/* "Class" as the runtime's report names it (trace/ruby_report.c). */
static void write_class(FILE *out, const struct ruby_tables *r, const struct live *l)
{
    unsigned type = l->type & ~SINGLETON_ROW;
    if (type == RUBY_T_IMEMO)
        fputs("(imemo)", out);
    else if (l->type & SINGLETON_ROW)
        fputs("(singleton class)", out);
    else if (!l->klass)
        fprintf(out, "(hidden %s)", ruby_type_name(type));
    else if (l->name)
        fputs(r->class_names + l->name - 1, out);
    else
        fprintf(out, "#<Class:0x%" PRIx64 ">", l->klass);
}

/* "file:line:Class\n" then "  from file:line" per caller, after `indent`. */
static void write_site(FILE *out, const struct ruby_tables *r, const struct live *l, int indent)
{
    fprintf(out, "%s:%u:", core_site_file(&r->sites, l->site), core_site_line(&r->sites, l->site));
    write_class(out, r, l);
    fputc('\n', out);
    uint32_t s = core_site_caller(&r->sites, l->site);
    for (int depth = 0; s != CORE_SITE_NONE && depth < MAX_DEPTH; depth++, s = core_site_caller(&r->sites, s))
        fprintf(out, "%*s  from %s:%u\n", indent, "", core_site_file(&r->sites, s), core_site_line(&r->sites, s));
}

static bool hidden_file(const struct ruby_tables *r, const char *file)
{
    for (uint64_t at = 0; at < r->hidden_len; at += strlen(r->hidden + at) + 1)
        if (strcmp(r->hidden + at, file) == 0)
            return true;
    return false;
}

static int digits(uint64_t v)
{
    int n = 1;
    while (v >= 10)
        v /= 10, n++;
    return n;
}

static bool write_rows(struct core_image *c, const struct ruby_tables *r, struct row *rows, size_t n, FILE *out,
                       const struct core_ruby_options *opt)
{
    uint64_t scale = r->sample > 1 ? r->sample : 1;
    for (size_t i = 0; i < n; i++) {
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (!f)
            return core_fail(c, "out of memory");
        write_site(f, r, &rows[i].key, 0);
        if (fclose(f) != 0)
            return core_fail(c, "out of memory");
        rows[i].text = text;
    }
    sorting = r;
    qsort(rows, n, sizeof *rows, by_count);
    int width = 7;
    for (size_t i = 0; i < n; i++)
        if (digits(rows[i].count * scale) > width)
            width = digits(rows[i].count * scale);
    size_t shown = 0, hidden = 0;
    uint64_t hidden_objects = 0;
    for (size_t i = 0; i < n; i++) {
        if (hidden_file(r, core_site_file(&r->sites, rows[i].key.site)) || (opt->filter && *opt->filter &&
                                                              !strstr(rows[i].text, opt->filter)))
            continue;
        if (opt->top && shown == opt->top) {
            hidden++;
            hidden_objects += rows[i].count * scale;
            continue;
        }
        shown++;
        fprintf(out, "%*" PRIu64 " ", width, rows[i].count * scale);
        write_site(out, r, &rows[i].key, width + 1);
    }
    if (shown == 0 && n && opt->filter && *opt->filter)
        fprintf(out, "memprof: no live Ruby objects match '%s'\n", opt->filter);
    else if (shown == 0 && n)
        fputs("memprof: no live Ruby objects match\n", out);
    else if (shown == 0)
        fputs("memprof: no live Ruby objects recorded\n", out);
    if (hidden)
        fprintf(out, "memprof: %zu more row%s (%" PRIu64 " objects) not shown\n", hidden, hidden == 1 ? "" : "s",
                hidden_objects);
    if (scale > 1)
        fprintf(out, "memprof: sampled 1 in %" PRIu64 " allocations: each count is k sampled objects x %" PRIu64
                     ", within about +-2*sqrt(k)*%" PRIu64 " of the true count (95%%)\n",
                scale, scale, scale);
    if (r->dropped)
        fprintf(out, "memprof: warning: %" PRIu64 " allocations were not recorded (out of memory)\n", r->dropped);
    return true;
}

bool core_ruby_report(struct core_image *c, FILE *out, const struct core_ruby_options *opt)
{
    struct ruby_tables r;
    struct tally y = { 0 };
    struct row *rows = NULL;
    size_t n = 0;
    bool ok = read_tables(c, &r) && each_record(c, &r, tally_one, &y);
    if (ok) {
        qsort(y.live, y.count, sizeof *y.live, by_key);
        rows = calloc(y.count + 1, sizeof *rows);
        if (!rows)
            ok = core_fail(c, "out of memory");
        for (size_t i = 0; ok && i < y.count; i++) {
            const struct live *l = &y.live[i];
            if (n && rows[n - 1].key.site == l->site && rows[n - 1].key.type == l->type &&
                rows[n - 1].key.klass == l->klass)
                rows[n - 1].count++;
            else
                rows[n++] = (struct row){ *l, 1, NULL };
        }
    }
    if (ok) {
        fprintf(out, "== memprof: live Ruby objects in %s %ld, garbage the GC had not found included "
                     "(count file:line:Class) ==\n",
                c->pid ? "pid" : "the core of pid", c->notes.pid);
        ok = write_rows(c, &r, rows, n, out, opt);
        fputs("memprof: from a core, where no GC can be asked: an object counts as live while its slot holds the type "
              "and class it was made with (one that died after the last GC and is not swept yet still counts)\n",
              out);
    }
    for (size_t i = 0; rows && i < n; i++)
        free(rows[i].text);
    free(rows);
    free(y.live);
    free_tables(&r);
    return ok;
}

struct lookup {
    uint64_t addr;
    bool found;
    uint32_t origin, aux;
};

static bool match_one(struct core_image *c, const struct ruby_tables *r, uint64_t addr,
                      const struct ruby_basic *basic, uint32_t origin, uint32_t aux, void *ctx)
{
    (void)c, (void)r, (void)basic;
    struct lookup *k = ctx;
    if (addr == k->addr)
        *k = (struct lookup){ addr, true, origin, aux };
    return true;
}

bool core_ruby_where(struct core_image *c, uint64_t addr, FILE *out, bool *found)
{
    struct ruby_tables r;
    struct lookup k = { addr, false, 0, 0 };
    *found = false;
    bool ok = read_tables(c, &r) && each_record(c, &r, match_one, &k);
    if (ok && k.found) {
        struct live l;
        bool live = object_live(c, &r, addr, NULL, k.origin, k.aux, &l);
        if (!live)
            l = (struct live){ (uint32_t)r.origins[k.origin].a, k.aux & c->tables.aux_type_mask,
                               k.origin < r.origin_name_count ? r.origin_names[k.origin] : 0, r.origins[k.origin].b };
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (f) {
            write_site(f, &r, &l, 0);
            fclose(f);
        }
        if (!text) {
            ok = core_fail(c, "out of memory");
        } else {
            /* " (dead: ...)" after file:line:Class, before the callers */
            char *eol = strchr(text, '\n');
            fprintf(out, "%.*s%s%s", (int)(eol - text), text,
                    live ? "" : " (dead: the object there is no longer the one recorded)", eol);
            *found = true;
        }
        free(text);
    }
    free_tables(&r);
    return ok;
}

/* --- the dump: ObjectSpace.dump_all's schema, as trace/ruby_dump.c -------- */

/* "STRING" for T_STRING. */
static const char *json_type(unsigned type)
{
    const char *n = ruby_type_name(type);
    return strncmp(n, "T_", 2) == 0 ? n + 2 : n;
}

struct dump {
    FILE *out;
    struct core_pair *named;   /* (class, 1 when dumped), by class: the classes objects name */
    size_t named_count, named_cap;
};

static bool dump_one(struct core_image *c, const struct ruby_tables *r, uint64_t addr,
                     const struct ruby_basic *basic, uint32_t origin, uint32_t aux, void *ctx)
{
    struct dump *d = ctx;
    struct live l;
    if (!object_live(c, r, addr, basic, origin, aux, &l))
        return true;
    unsigned type = l.type & ~SINGLETON_ROW;
    fprintf(d->out, "{\"address\":\"0x%" PRIx64 "\", \"type\":\"%s\"", addr, json_type(type));
    if (d->named_count + 2 > d->named_cap) {
        d->named_cap = d->named_cap ? d->named_cap * 2 : 1024;
        struct core_pair *grown = realloc(d->named, d->named_cap * sizeof *grown);
        if (!grown)
            return core_fail(c, "out of memory");
        d->named = grown;
    }
    if (l.klass && type != RUBY_T_IMEMO) {
        fprintf(d->out, ", \"class\":\"0x%" PRIx64 "\"", l.klass);
        d->named[d->named_count++] = (struct core_pair){ l.klass, 0 };
    }
    if (type == RUBY_T_CLASS || type == RUBY_T_MODULE) {
        uint32_t name = class_name(r, addr);
        if (name && !(l.type & SINGLETON_ROW)) {
            fputs(", \"name\":", d->out);
            const char *class_name_text = r->class_names + name - 1;
            json_string(d->out, class_name_text, strlen(class_name_text));
        }
        d->named[d->named_count++] = (struct core_pair){ addr, 1 };
    }
    fputs(", \"file\":", d->out);
    const char *file = core_site_file(&r->sites, l.site);
    json_string(d->out, file, strlen(file));
    fprintf(d->out, ", \"line\":%u", core_site_line(&r->sites, l.site));
    uint32_t epoch = aux >> c->tables.aux_epoch_shift;
    uint64_t generation = epoch == 0 ? 0 : epoch < r->epoch_count ? r->epoch_gc[epoch] : UINT64_MAX;
    if (generation != UINT64_MAX)
        fprintf(d->out, ", \"generation\":%" PRIu64, generation);
    fputs("}\n", d->out);
    return true;
}

/* The live objects as JSON lines in ObjectSpace.dump_all's schema (no
 * memsize: that needs the VM), then the classes they name that were not
 * dumped themselves, with their names. */
bool core_ruby_dump(struct core_image *c, FILE *out)
{
    struct ruby_tables r;
    struct dump d = { .out = out };
    bool ok = read_tables(c, &r) && each_record(c, &r, dump_one, &d);
    if (ok) {
        qsort(d.named, d.named_count, sizeof *d.named, by_class);
        for (size_t i = 0; i < d.named_count; i++) {
            size_t end = i;
            bool dumped = false;
            while (end < d.named_count && d.named[end].a == d.named[i].a)
                dumped |= d.named[end++].b != 0;
            uint64_t klass = d.named[i].a;
            i = end - 1;
            struct ruby_basic b;
            uint32_t name = class_name(&r, klass);
            if (dumped || !core_peek(c, klass, &b, sizeof b))
                continue;
            unsigned type = (unsigned)(b.flags & RUBY_T_MASK);
            if (type != RUBY_T_CLASS && type != RUBY_T_MODULE)
                continue;
            fprintf(out, "{\"address\":\"0x%" PRIx64 "\", \"type\":\"%s\"", klass, json_type(type));
            if (name) {
                fputs(", \"name\":", out);
                json_string(out, r.class_names + name - 1, strlen(r.class_names + name - 1));
            }
            fputs("}\n", out);
        }
    }
    free(d.named);
    free_tables(&r);
    return ok;
}

bool core_ruby_allocations(struct core_image *c, FILE *out)
{
    const struct memprof_tables *t = &c->tables;
    struct ruby_tables r;
    if (!read_tables(c, &r))
        return false;
    uint64_t at = 0, bytes = 0;
    bool ok = core_read_u64(c, t->ruby_tracer + t->ruby_origin_allocs, &at, "the Ruby allocation counts") &&
              core_read_u64(c, t->ruby_tracer + t->ruby_origin_allocs_bytes, &bytes, "the Ruby allocation counts");
    uint64_t n = bytes / 8 < r.origin_count ? bytes / 8 : r.origin_count;
    uint64_t *made = ok ? calloc(r.origin_count + 1, sizeof *made) : NULL;
    unsigned char *cache = ok ? malloc((size_t)t->pc_cache_entries * t->pc_entry_size + 1) : NULL;
    if (ok && (!made || !cache))
        ok = core_fail(c, "out of memory");
    ok = ok && (!at || !n || core_read(c, at, made, n * 8, "the Ruby allocation counts")) &&
         core_read(c, t->ruby_tracer + t->ruby_pc_cache, cache, (size_t)t->pc_cache_entries * t->pc_entry_size,
                   "the Ruby pc cache");
    /* The counts the pc cache holds, not added to their origins yet. */
    for (uint32_t i = 0; ok && i < t->pc_cache_entries; i++) {
        uint32_t origin, allocs;
        memcpy(&origin, cache + (size_t)i * t->pc_entry_size + t->pc_entry_origin, 4);
        memcpy(&allocs, cache + (size_t)i * t->pc_entry_size + t->pc_entry_allocs, 4);
        if (allocs && origin < r.origin_count)
            made[origin] += allocs;
    }
    uint64_t scale = r.sample > 1 ? r.sample : 1;
    for (uint64_t i = 0; ok && i < r.origin_count; i++) {
        struct live l = { .site = (uint32_t)r.origins[i].a, .klass = r.origins[i].b,
                          .name = i < r.origin_name_count ? r.origin_names[i] : 0 };
        if (!made[i] || !l.klass || l.site >= r.sites.count)
            continue;   /* hidden and internal objects: their type is not in the origin */
        fprintf(out, "%" PRIu64 " ", made[i] * scale);
        write_site(out, &r, &l, 0);
    }
    free(made);
    free(cache);
    free_tables(&r);
    return ok;
}
