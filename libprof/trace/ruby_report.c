/* The live-object table: which tracked objects are still alive, grouped by
 * file:line:Class, largest first. Runs with the process stopped anywhere (GDB)
 * or at exit: no malloc, no Ruby allocation, a try-lock, and every read of
 * the Ruby heap checked against the memory map first. */
#include "ruby.h"
#include "ruby_state.h"
#include "../util/maps.h"
#include "../util/pages.h"
#include <string.h>

struct row {
    uint32_t site;
    uint32_t type;
    VALUE klass;
    uint64_t count;
    size_t name;      /* offset of the class name in the names buffer */
};

struct rows {
    struct row *rows;
    size_t count, bytes;
    uint32_t *index;  /* open-addressed set of (row + 1) */
    size_t mask, index_bytes;
    struct out names;
};

static const char *const type_names[RUBY_T_MASK + 1] = {
    [RUBY_T_NONE] = "T_NONE", [RUBY_T_OBJECT] = "T_OBJECT", [RUBY_T_CLASS] = "T_CLASS",
    [RUBY_T_MODULE] = "T_MODULE", [RUBY_T_FLOAT] = "T_FLOAT", [RUBY_T_STRING] = "T_STRING",
    [RUBY_T_REGEXP] = "T_REGEXP", [RUBY_T_ARRAY] = "T_ARRAY", [RUBY_T_HASH] = "T_HASH",
    [RUBY_T_STRUCT] = "T_STRUCT", [RUBY_T_BIGNUM] = "T_BIGNUM", [RUBY_T_FILE] = "T_FILE",
    [RUBY_T_DATA] = "T_DATA", [RUBY_T_MATCH] = "T_MATCH", [RUBY_T_COMPLEX] = "T_COMPLEX",
    [RUBY_T_RATIONAL] = "T_RATIONAL", [RUBY_T_SYMBOL] = "T_SYMBOL", [RUBY_T_IMEMO] = "T_IMEMO",
    [RUBY_T_NODE] = "T_NODE", [RUBY_T_ICLASS] = "T_ICLASS",
};

static const char *type_name(unsigned type)
{
    const char *n = type <= RUBY_T_MASK ? type_names[type] : NULL;
    return n ? n : "T_UNKNOWN";
}

static const struct ruby_basic *heap_object(const struct maps *maps, VALUE v)
{
    if (v == 0 || (v & 7) || !maps_readable(maps, v, sizeof(struct ruby_basic)))
        return NULL;
    return (const struct ruby_basic *)v;
}

/* Alive, and still the object memprof saw allocated: same type and class at
 * that address, and not garbage awaiting a lazy sweep (the GC's own test). */
static bool still_live(const struct ruby_api *api, const struct maps *maps,
                       const struct addr_entry *e)
{
    const struct ruby_basic *b = heap_object(maps, e->key);
    if (!b || (b->flags & RUBY_T_MASK) != e->aux || b->klass != e->value)
        return false;
    if (!maps_readable(maps, e->key & ~(RUBY_HEAP_PAGE_ALIGN - 1), sizeof(void *)))
        return false;
    return api->rb_objspace_markable_object_p(e->key) != 0;
}

/* The class's name as Ruby prints it, without allocating: the cached path of
 * a named class, else a description. T_IMEMO's klass word is payload. */
static void class_name(const struct ruby_api *api, const struct maps *maps,
                       VALUE klass, unsigned type, struct out *o)
{
    if (type == RUBY_T_IMEMO) {
        out_str(o, "(imemo)");
        return;
    }
    if (klass == 0) {
        out_str(o, "(hidden ");
        out_str(o, type_name(type));
        out_char(o, ')');
        return;
    }
    const struct ruby_basic *k = heap_object(maps, klass);
    unsigned ktype = k ? (unsigned)(k->flags & RUBY_T_MASK) : RUBY_T_NONE;
    if (ktype == RUBY_T_CLASS || ktype == RUBY_T_MODULE) {
        volatile VALUE path = api->rb_class_path_cached(klass);
        const struct ruby_basic *p = heap_object(maps, path);
        if (p && (p->flags & RUBY_T_MASK) == RUBY_T_STRING) {
            const char *s = api->rb_string_value_ptr(&path);
            if (s && maps_readable(maps, (uintptr_t)s, 1)) {
                out_bytes(o, s, strnlen(s, 256));
                return;
            }
        }
    }
    out_str(o, "#<Class:");
    out_hex(o, klass);
    out_char(o, '>');
}

static uint64_t row_hash(uint32_t site, uint32_t type, VALUE klass)
{
    return ((uint64_t)site * 0x9E3779B97F4A7C15ull) ^ (klass * 0xC2B2AE3D27D4EB4Full) ^ type;
}

static bool rows_init(struct rows *r, size_t max_rows)
{
    *r = (struct rows){ 0 };
    size_t cap = 16;
    while (cap < max_rows * 2)
        cap *= 2;
    r->bytes = (max_rows ? max_rows : 1) * sizeof *r->rows;
    r->index_bytes = cap * sizeof *r->index;
    r->mask = cap - 1;
    r->rows = pages_alloc(r->bytes);
    r->index = pages_alloc(r->index_bytes);
    out_init_mem(&r->names);
    return r->rows && r->index && !r->names.error;
}

static void rows_free(struct rows *r)
{
    pages_free(r->rows, r->bytes);
    pages_free(r->index, r->index_bytes);
    out_release_mem(&r->names);
}

static struct row *rows_add(struct rows *r, uint32_t site, uint32_t type, VALUE klass)
{
    size_t i = (size_t)row_hash(site, type, klass) & r->mask;
    for (; r->index[i]; i = (i + 1) & r->mask) {
        struct row *row = &r->rows[r->index[i] - 1];
        if (row->site == site && row->type == type && row->klass == klass)
            return row;
    }
    struct row *row = &r->rows[r->count++];
    *row = (struct row){ .site = site, .type = type, .klass = klass };
    r->index[i] = (uint32_t)r->count;
    return row;
}

/* Largest count first; ties in file, line, class order so output is stable. */
static int row_cmp(const struct rows *r, const struct site_table *sites,
                   const struct row *a, const struct row *b)
{
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    int c = strcmp(sites_file(sites, a->site), sites_file(sites, b->site));
    if (c)
        return c;
    uint32_t la = sites_line(sites, a->site), lb = sites_line(sites, b->site);
    if (la != lb)
        return la < lb ? -1 : 1;
    return strcmp(r->names.buf + a->name, r->names.buf + b->name);
}

/* Heapsort: in place and allocation-free (glibc's qsort may call malloc). */
static void sift_down(struct rows *r, const struct site_table *sites, size_t root, size_t n)
{
    for (;;) {
        size_t child = 2 * root + 1;
        if (child >= n)
            return;
        if (child + 1 < n && row_cmp(r, sites, &r->rows[child], &r->rows[child + 1]) < 0)
            child++;
        if (row_cmp(r, sites, &r->rows[root], &r->rows[child]) >= 0)
            return;
        struct row tmp = r->rows[root];
        r->rows[root] = r->rows[child];
        r->rows[child] = tmp;
        root = child;
    }
}

static void rows_sort(struct rows *r, const struct site_table *sites)
{
    for (size_t i = r->count / 2; i-- > 0;)
        sift_down(r, sites, i, r->count);
    for (size_t end = r->count; end-- > 1;) {
        struct row tmp = r->rows[0];
        r->rows[0] = r->rows[end];
        r->rows[end] = tmp;
        sift_down(r, sites, 0, end);
    }
}

static void write_rows(struct out *o, const struct rows *r, const struct site_table *sites)
{
    int width = 7;
    if (r->count && u64_digits(r->rows[0].count) > width)
        width = u64_digits(r->rows[0].count);
    for (size_t i = 0; i < r->count; i++) {
        const struct row *row = &r->rows[i];
        out_u64_width(o, row->count, width);
        out_char(o, ' ');
        out_str(o, sites_file(sites, row->site));
        out_char(o, ':');
        out_u64(o, sites_line(sites, row->site));
        out_char(o, ':');
        out_str(o, r->names.buf + row->name);
        out_char(o, '\n');
    }
}

enum ruby_status ruby_tracer_report(struct out *o)
{
    struct ruby_tracer *t = &ruby_tracer;
    if (!ruby_tracer_available())
        return RUBY_NOT_RUBY;
    if (t->api.rb_during_gc())
        return RUBY_IN_GC;
    if (!spin_trylock(&t->lock))
        return RUBY_BUSY;

    enum ruby_status status = RUBY_OK;
    struct maps maps;
    struct rows rows;
    bool have_maps = maps_load(&maps) == 0;
    if (!have_maps) {
        status = RUBY_NO_MEMORY;
        goto out;
    }
    if (!rows_init(&rows, t->objects.count)) {
        rows_free(&rows);
        status = RUBY_NO_MEMORY;
        goto out;
    }
    addr_table_each(&t->objects, e) {
        if (still_live(&t->api, &maps, e))
            rows_add(&rows, e->site, e->aux, (VALUE)e->value)->count++;
    }
    for (size_t i = 0; i < rows.count; i++) {
        rows.rows[i].name = rows.names.len;
        class_name(&t->api, &maps, rows.rows[i].klass, rows.rows[i].type, &rows.names);
        out_char(&rows.names, '\0');
    }
    if (rows.names.error) {
        status = RUBY_NO_MEMORY;
    } else {
        rows_sort(&rows, &t->sites);
        write_rows(o, &rows, &t->sites);
        if (rows.count == 0)
            out_str(o, "memprof: no live Ruby objects recorded\n");
        if (t->dropped) {
            out_str(o, "memprof: warning: ");
            out_u64(o, t->dropped);
            out_str(o, " allocations were not recorded (out of memory)\n");
        }
    }
    rows_free(&rows);
out:
    if (have_maps)
        maps_release(&maps);
    spin_unlock(&t->lock);
    return status;
}
