/* The live-object table: which tracked objects are still alive, grouped by
 * file:line:Class, largest first. Runs with the process stopped anywhere (GDB)
 * or at exit: no malloc, no Ruby allocation, a try-lock, and every read of
 * the Ruby heap checked against the memory map first. */
#include "ruby.h"
#include "ruby_state.h"
#include "../../util/maps.h"
#include "../../util/pages.h"
#include "../../util/sort.h"
#include <string.h>
#include <unistd.h>

struct row {
    uint32_t site;
    uint32_t type;
    VALUE klass;      /* the objects' class now (0: hidden) */
    uint64_t count;
    uint64_t bytes;
    uint64_t allocated;   /* objects made at the site of this class since recording started */
    size_t name;      /* offset of the class name in the names buffer */
};

struct rows {
    struct row *rows;
    size_t count, bytes;
    size_t filled;    /* bytes of rows mapped ahead (rows_add): room for one per object, few used */
    uint32_t *index;  /* open-addressed set of (row + 1), at most half full */
    size_t mask, index_bytes, most_mask;
    bool failed;      /* the index could not grow: the report is out of memory */
    struct out names;
    /* Rows of one class apart by type too (as a core's reader keys them);
     * not with allocated counts, whose origins keep no type. */
    bool by_type;
};

static const struct ruby_basic *heap_object(const struct maps *maps, VALUE v)
{
    if (v == 0 || (v & 7) || !maps_readable(maps, v, sizeof(struct ruby_basic)))
        return NULL;
    return (const struct ruby_basic *)v;
}


/* The object's class now, if the object at that address is still the one
 * memprof saw allocated: same type, the same class or a singleton class of
 * it (or a class given to a hidden object), and not garbage awaiting a lazy
 * sweep (the GC's own test). NOT_LIVE otherwise. */
VALUE ruby_live_class(const struct ruby_api *api, const struct maps *maps,
                      const struct slot_entry *e, VALUE recorded_class)
{
    const struct ruby_basic *b = heap_object(maps, e->key);
    if (!b || (b->flags & RUBY_T_MASK) != RUBY_AUX_TYPE(e->aux))
        return RUBY_NOT_LIVE;
    if (!maps_readable(maps, e->key & ~(RUBY_HEAP_PAGE_ALIGN - 1), sizeof(void *)))
        return RUBY_NOT_LIVE;
    if (!api->rb_objspace_markable_object_p(e->key))
        return RUBY_NOT_LIVE;
    if (RUBY_AUX_TYPE(e->aux) == RUBY_T_IMEMO)
        return 0;
    VALUE now = b->klass;
    if (now == recorded_class || now == 0)
        return now;
    if (!heap_object(maps, now))
        return RUBY_NOT_LIVE;
    VALUE real = api->rb_class_real(now);
    return recorded_class == 0 || real == recorded_class ? real : RUBY_NOT_LIVE;
}

const char *ruby_class_path(const struct ruby_api *api, const struct maps *maps, VALUE klass, size_t *len)
{
    volatile VALUE path = api->rb_class_path_cached(klass);
    if (path == RUBY_QNIL || (maps ? !heap_object(maps, path) : path == 0 || (path & 7)) ||
        (((const struct ruby_basic *)path)->flags & RUBY_T_MASK) != RUBY_T_STRING)
        return NULL;
    const char *s = api->rb_string_value_ptr(&path);
    if (!s || (maps && !maps_readable(maps, (uintptr_t)s, 1)))
        return NULL;
    *len = strnlen(s, 256);
    return s;
}

/* The class's name as Ruby prints it, without allocating: the cached path of
 * a named class, else a description. T_IMEMO's klass word is payload. */
void ruby_class_name(const struct ruby_api *api, const struct maps *maps,
                     VALUE klass, unsigned type, struct out *o)
{
    if (type == RUBY_T_IMEMO) {
        out_str(o, "(imemo)");
        return;
    }
    if (type == (RUBY_T_CLASS | ROW_SINGLETON_CLASS)) {
        out_str(o, "(singleton class)");
        return;
    }
    if (klass == 0 && type == RUBY_T_NONE) {   /* allocated: the type is not kept */
        out_str(o, "(hidden or internal)");
        return;
    }
    if (klass == 0) {
        out_str(o, "(hidden ");
        out_str(o, ruby_type_name(type));
        out_char(o, ')');
        return;
    }
    const struct ruby_basic *k = heap_object(maps, klass);
    unsigned ktype = k ? (unsigned)(k->flags & RUBY_T_MASK) : RUBY_T_NONE;
    size_t len;
    const char *path = ktype == RUBY_T_CLASS || ktype == RUBY_T_MODULE ? ruby_class_path(api, maps, klass, &len) : NULL;
    if (path) {
        out_bytes(o, path, len);
        return;
    }
    out_str(o, "#<Class:");
    out_hex(o, klass);
    out_char(o, '>');
}

static uint64_t row_hash(uint32_t site, uint32_t type, VALUE klass)
{
    return ((uint64_t)site * 0x9E3779B97F4A7C15ull) ^ (klass * 0xC2B2AE3D27D4EB4Full) ^ type;
}

/* A row's key: its site, its class, and its type (with allocated counts,
 * only where the class does not say it: hidden objects, and a singleton
 * class against its class's class). */
static uint32_t key_type(const struct rows *r, uint32_t type, VALUE klass)
{
    return klass && !r->by_type ? type & ROW_SINGLETON_CLASS : type;
}

/* Room for `max_rows` rows (a page is touched only when a row is put in
 * it); the index starts small and grows with the rows, not with the objects:
 * a sparse index as large as a million objects touches every page of it. */
static bool rows_init(struct rows *r, size_t max_rows)
{
    *r = (struct rows){ 0 };
    size_t most = 16;
    while (most < max_rows * 2)
        most *= 2;
    size_t cap = most < 4096 ? most : 4096;
    r->bytes = (max_rows ? max_rows : 1) * sizeof *r->rows;
    r->index_bytes = cap * sizeof *r->index;
    r->mask = cap - 1;
    r->most_mask = most - 1;
    r->rows = pages_alloc(r->bytes);
    r->index = pages_alloc_filled(r->index_bytes);   /* hashed all over: mapped at once */
    out_init_mem(&r->names);
    return r->rows && r->index && !r->names.error;
}

/* The index four times as large, every row put in it again; false when
 * there is no memory for it (the old one is kept). */
static bool rows_grow_index(struct rows *r)
{
    size_t cap = (r->mask + 1) * 4 < r->most_mask + 1 ? (r->mask + 1) * 4 : r->most_mask + 1;
    uint32_t *index = pages_alloc_filled(cap * sizeof *index);
    if (!index)
        return false;
    for (size_t n = 0; n < r->count; n++) {
        const struct row *row = &r->rows[n];
        size_t i = (size_t)row_hash(row->site, key_type(r, row->type, row->klass), row->klass) & (cap - 1);
        while (index[i])
            i = (i + 1) & (cap - 1);
        index[i] = (uint32_t)n + 1;
    }
    pages_free(r->index, r->index_bytes);
    r->index = index;
    r->index_bytes = cap * sizeof *index;
    r->mask = cap - 1;
    return true;
}

static void rows_free(struct rows *r)
{
    pages_free(r->rows, r->bytes);
    pages_free(r->index, r->index_bytes);
    out_release_mem(&r->names);
}

static struct row *rows_add(struct rows *r, uint32_t site, uint32_t type, VALUE klass)
{
    uint32_t key = key_type(r, type, klass);
    size_t i = (size_t)row_hash(site, key, klass) & r->mask;
    for (; r->index[i]; i = (i + 1) & r->mask) {
        struct row *row = &r->rows[r->index[i] - 1];
        if (row->site == site && key_type(r, row->type, row->klass) == key && row->klass == klass)
            return row;
    }
    if ((r->count + 1) * 2 > r->mask + 1 && r->mask < r->most_mask) {
        if (rows_grow_index(r))
            return rows_add(r, site, type, klass);   /* its place in the new index */
        if (r->count + 2 > r->mask + 1) {
            static struct row nowhere;   /* counts dropped: the report says out of memory */
            r->failed = true;
            return &nowhere;
        }
    }
    pages_fill_ahead(r->rows, (r->count + 1) * sizeof *r->rows, &r->filled, r->bytes);
    struct row *row = &r->rows[r->count++];
    *row = (struct row){ .site = site, .type = type, .klass = klass };
    r->index[i] = (uint32_t)r->count;
    return row;
}

_Static_assert(sizeof(struct row) <= 64, "sort_items swaps through a 64-byte buffer");

/* What rows are compared by: the sites and names they refer to, and the key. */
struct row_order {
    const struct rows *rows;
    const struct site_table *sites;
    enum ruby_sort sort;
};

/* Largest first (count or bytes); ties in site, class order so output is stable. */
static int row_cmp(const void *x, const void *y, void *ctx)
{
    const struct row *a = x, *b = y;
    const struct row_order *o = ctx;
    uint64_t ka = o->sort == RUBY_SORT_BYTES ? a->bytes : o->sort == RUBY_SORT_ALLOCATED ? a->allocated : a->count;
    uint64_t kb = o->sort == RUBY_SORT_BYTES ? b->bytes : o->sort == RUBY_SORT_ALLOCATED ? b->allocated : b->count;
    if (ka != kb)
        return ka > kb ? -1 : 1;
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    int c = sites_compare(o->sites, a->site, b->site);
    if (c)
        return c;
    return strcmp(o->rows->names.buf + a->name, o->rows->names.buf + b->name);
}

bool ruby_tracer_hide_file(const char *file)
{
    struct ruby_tracer *t = &ruby_tracer;
    size_t n = strlen(file);
    for (size_t at = 0; at < t->hidden_len; at += strlen(t->hidden_files + at) + 1)
        if (strcmp(t->hidden_files + at, file) == 0)
            return true;
    if (n == 0 || t->hidden_len + n + 1 > sizeof t->hidden_files)
        return false;
    memcpy(t->hidden_files + t->hidden_len, file, n + 1);
    t->hidden_len += n + 1;
    return true;
}

static bool hidden_file(const char *file)
{
    const struct ruby_tracer *t = &ruby_tracer;
    for (size_t at = 0; at < t->hidden_len; at += strlen(t->hidden_files + at) + 1)
        if (strcmp(t->hidden_files + at, file) == 0)
            return true;
    return false;
}

/* "file:line:" of a site's first frame. */
static void write_site(struct out *o, const struct site_table *sites, uint32_t site)
{
    out_str(o, sites_file(sites, site));
    out_char(o, ':');
    out_u64(o, sites_line(sites, site));
    out_char(o, ':');
}

/* One "  from file:line" line per caller of the site, after `indent` spaces. */
static void write_callers(struct out *o, const struct site_table *sites, uint32_t site, int indent)
{
    for (uint32_t s = sites_caller(sites, site); s != SITE_NONE; s = sites_caller(sites, s)) {
        for (int pad = indent; pad > 0; pad--)
            out_char(o, ' ');
        out_str(o, "  from ");
        out_str(o, sites_file(sites, s));
        out_char(o, ':');
        out_u64(o, sites_line(sites, s));
        out_char(o, '\n');
    }
}

/* Does the row's "file:line:Class" (or a caller's file:line) contain `filter`? */
static bool row_matches(const struct rows *r, const struct site_table *sites,
                        const struct row *row, const char *filter)
{
    if (!filter || !*filter)
        return true;
    char text[1024];
    struct out o;
    out_init_fd(&o, -1, text, sizeof text - 1);
    write_site(&o, sites, row->site);
    out_str(&o, r->names.buf + row->name);
    out_char(&o, '\n');
    write_callers(&o, sites, row->site, 0);
    text[o.len] = '\0';
    return strstr(text, filter) != NULL;
}

static void write_rows(struct out *o, const struct rows *r, const struct site_table *sites,
                       const struct ruby_report_options *opt, unsigned scale)
{
    int width = 7, bytes_width = 10, allocated_width = 9;
    for (size_t i = 0; i < r->count; i++) {
        if (u64_digits(r->rows[i].count * scale) > width)
            width = u64_digits(r->rows[i].count * scale);
        if (u64_digits(r->rows[i].bytes * scale) > bytes_width)
            bytes_width = u64_digits(r->rows[i].bytes * scale);
        if (u64_digits(r->rows[i].allocated * scale) > allocated_width)
            allocated_width = u64_digits(r->rows[i].allocated * scale);
    }
    size_t shown = 0, hidden = 0;
    uint64_t hidden_objects = 0;
    for (size_t i = 0; i < r->count; i++) {
        const struct row *row = &r->rows[i];
        if (hidden_file(sites_file(sites, row->site)) || !row_matches(r, sites, row, opt->filter))
            continue;
        if (opt->top && shown == opt->top) {
            hidden++;
            hidden_objects += row->count * scale;
            continue;
        }
        shown++;
        out_u64_width(o, row->count * scale, width);
        if (opt->allocated) {
            out_char(o, ' ');
            out_u64_width(o, row->allocated * scale, allocated_width);
        }
        if (opt->bytes) {
            out_char(o, ' ');
            out_u64_width(o, row->bytes * scale, bytes_width);
        }
        out_char(o, ' ');
        write_site(o, sites, row->site);
        out_str(o, r->names.buf + row->name);
        out_char(o, '\n');
        write_callers(o, sites, row->site,
                      width + 1 + (opt->bytes ? bytes_width + 1 : 0) + (opt->allocated ? allocated_width + 1 : 0));
    }
    if (shown == 0 && r->count && opt->filter && *opt->filter) {
        out_str(o, "memprof: no live Ruby objects match '");
        out_str(o, opt->filter);
        out_str(o, "'\n");
    } else if (shown == 0 && r->count) {
        out_str(o, "memprof: no live Ruby objects match\n");   /* every row hidden */
    } else if (shown == 0) {
        out_str(o, "memprof: no live Ruby objects recorded\n");
    }
    if (hidden) {
        out_str(o, "memprof: ");
        out_u64(o, hidden);
        out_str(o, hidden == 1 ? " more row (" : " more rows (");
        out_u64(o, hidden_objects);
        out_str(o, " objects) not shown\n");
    }
}

/* Count one record into its row, if its object is alive. */
struct tally {
    const struct ruby_tracer *t;
    const struct maps *maps;
    struct rows *rows;
    const struct ruby_report_options *opt;
    bool want_bytes;
};

static void tally_one(const struct slot_entry *e, void *ctx)
{
    struct tally *y = ctx;
    const struct ruby_tracer *t = y->t;
    if (RUBY_AUX_EPOCH(e->aux) < y->opt->since)
        return;
    const struct intern_tuple *origin = intern_get(&t->origins, e->origin);
    VALUE klass = ruby_live_class(&t->api, y->maps, e, (VALUE)origin->b);
    if (klass == RUBY_NOT_LIVE)
        return;
    uint32_t type = RUBY_AUX_TYPE(e->aux);
    if (type == RUBY_T_CLASS && (((const struct ruby_basic *)e->key)->flags & RUBY_FL_SINGLETON))
        type |= ROW_SINGLETON_CLASS;
    struct row *row = rows_add(y->rows, (uint32_t)origin->a, type, klass);
    row->count++;
    if (y->want_bytes)
        row->bytes += t->api.rb_obj_memsize_of(e->key);
}

/* An origin's objects made into the row of its site and class (hidden and
 * internal objects together: their type is not in the origin). */
static void add_allocated(const struct ruby_tracer *t, struct rows *rows, uint32_t origin, uint64_t made)
{
    const struct intern_tuple *o = intern_get(&t->origins, origin);
    VALUE klass = (VALUE)o->b;
    rows_add(rows, (uint32_t)o->a, klass ? 0 : RUBY_T_NONE, klass)->allocated += made;
}

/* Every origin's objects made: the counts moved to it, and those its pc
 * cache entries still hold; for a report of the epoch the counts were last
 * kept at (Memprof.report's block), those made since. */
static void tally_allocated(const struct ruby_tracer *t, struct rows *rows, uint32_t since)
{
    size_t n = t->origins.count;
    bool from_base = since && since == t->allocs_base_epoch;
    for (size_t i = 0; i < n && i * sizeof *t->origin_allocs < t->origin_allocs_bytes; i++) {
        uint64_t base = from_base && i * sizeof *t->allocs_base < t->allocs_base_bytes ? t->allocs_base[i] : 0;
        if (t->origin_allocs[i] > base)
            add_allocated(t, rows, (uint32_t)i, t->origin_allocs[i] - base);
    }
    for (size_t i = 0; i < RUBY_PC_CACHE_SIZE; i++) {
        const struct ruby_pc_cache_entry *e = &t->pc_cache[i];
        if (e->allocs && e->origin < n)
            add_allocated(t, rows, e->origin, e->allocs);
    }
}

/* The table's first line: what its objects are, and its columns. */
static void write_header(struct out *o, const struct ruby_report_options *opt)
{
    static const char *const gc_words[] = {
        [RUBY_GC_NOT_ASKED] = ", garbage the GC has not found included (no GC asked for)",
        [RUBY_GC_RAN] = " after a full GC",
        [RUBY_GC_NOT_HERE] = ", garbage the GC has not found included (no GC may run here)",
        [RUBY_GC_NONE] = ", garbage the GC has not found included (this Ruby has no rb_gc)",
        [RUBY_GC_DISABLED] = ", garbage the GC has not found included (the program disabled the GC)",
    };
    out_str(o, "== memprof: live Ruby objects ");
    out_str(o, opt->when ? opt->when : "in");
    out_str(o, " pid ");
    out_u64(o, (uint64_t)getpid());
    out_str(o, gc_words[opt->gc <= RUBY_GC_DISABLED ? opt->gc : RUBY_GC_NOT_ASKED]);
    out_str(o, " (count");
    if (opt->allocated)
        out_str(o, " allocated");
    if (opt->bytes)
        out_str(o, " bytes");
    out_str(o, " file:line:Class) ==\n");
}

/* A live String's bytes (*len of them, 64 at most read): false unless the
 * object's own words say where, and those bytes are readable. */
#define STRING_VALUE_MAX 64
static bool string_bytes(const struct maps *maps, VALUE obj, const char **bytes, long *len)
{
    const struct ruby_string *str = (const struct ruby_string *)obj;
    VALUE flags = str->basic.flags;
    if (flags & RUBY_STR_NOEMBED) {
        *len = str->as.heap.len;
        *bytes = str->as.heap.ptr;
        return *len >= 0 && *len <= (1L << 40) &&
               (!*len || maps_readable(maps, (uintptr_t)*bytes,
                                       *len < STRING_VALUE_MAX ? (size_t)*len : STRING_VALUE_MAX));
    }
    *len = (long)((flags & RUBY_STR_EMBED_LEN_MASK) >> RUBY_STR_EMBED_LEN_SHIFT);
    *bytes = str->as.embed;
    return *len < (long)sizeof str->as.embed;
}

/* The value cut at 64 bytes: printable ASCII as it is, '"' and '\\'
 * escaped, any other byte as \xNN; "..." after the quote when cut. */
static void write_string_value(struct out *o, const char *bytes, long len)
{
    static const char hex[] = "0123456789abcdef";
    out_char(o, '"');
    long end = len < STRING_VALUE_MAX ? len : STRING_VALUE_MAX;
    for (long i = 0; i < end;) {
        long plain = i;   /* a run of bytes written as they are, in one copy */
        while (plain < end && bytes[plain] >= 0x20 && bytes[plain] < 0x7f && bytes[plain] != '"' &&
               bytes[plain] != '\\')
            plain++;
        out_bytes(o, bytes + i, (size_t)(plain - i));
        if (plain == end)
            break;
        unsigned char c = (unsigned char)bytes[plain];
        if (c == '"' || c == '\\') {
            out_char(o, '\\');
            out_char(o, (char)c);
        } else {
            out_str(o, "\\x");
            out_char(o, hex[c >> 4]);
            out_char(o, hex[c & 15]);
        }
        i = plain + 1;
    }
    out_char(o, '"');
    if (len > STRING_VALUE_MAX)
        out_str(o, "...");
}

struct strings_pass {
    const struct ruby_tracer *t;
    const struct maps *maps;
    const struct ruby_report_options *opt;
    struct out *o;
};

/* One live String (of class String or a subclass): "file:line\tVALUE". */
static void write_string_one(const struct slot_entry *e, void *ctx)
{
    struct strings_pass *p = ctx;
    const struct ruby_tracer *t = p->t;
    if (RUBY_AUX_TYPE(e->aux) != RUBY_T_STRING || RUBY_AUX_EPOCH(e->aux) < p->opt->since)
        return;
    const struct intern_tuple *origin = intern_get(&t->origins, e->origin);
    VALUE klass = ruby_live_class(&t->api, p->maps, e, (VALUE)origin->b);
    uint32_t site = (uint32_t)origin->a;
    const char *bytes;
    long len;
    if (klass == RUBY_NOT_LIVE || klass == 0 || hidden_file(sites_file(&t->sites, site)) ||
        !string_bytes(p->maps, e->key, &bytes, &len))
        return;
    out_str(p->o, sites_file(&t->sites, site));
    out_char(p->o, ':');
    out_u64(p->o, sites_line(&t->sites, site));
    out_char(p->o, '\t');
    write_string_value(p->o, bytes, len);
    out_char(p->o, '\n');
}

enum memprof_status ruby_lock_for_reading(void)
{
    if (!ruby_tracer_available())
        return MEMPROF_NOT_RUBY;
    if (ruby_tracer.api.rb_during_gc())
        return MEMPROF_IN_GC;
    return spin_trylock_report(&ruby_tracer.lock) ? MEMPROF_OK : MEMPROF_BUSY;
}

enum memprof_status ruby_tracer_report(struct out *o, const struct ruby_report_options *opt)
{
    static const struct ruby_report_options defaults;
    struct ruby_tracer *t = &ruby_tracer;
    if (!opt)
        opt = &defaults;
    enum memprof_status locked = ruby_lock_for_reading();
    if (locked != MEMPROF_OK)
        return locked;

    enum memprof_status status = MEMPROF_OK;
    struct maps maps;
    struct rows rows;
    bool have_maps = maps_load(&maps) == 0;
    if (!have_maps) {
        status = MEMPROF_NO_MEMORY;
        goto out;
    }
    if (!rows_init(&rows, t->objects.count + (opt->allocated ? t->origins.count : 0))) {
        rows_free(&rows);
        status = MEMPROF_NO_MEMORY;
        goto out;
    }
    rows.by_type = !opt->allocated;
    struct tally tally = {
        .t = t, .maps = &maps, .rows = &rows, .opt = opt,
        .want_bytes = (opt->bytes || opt->sort == RUBY_SORT_BYTES) && t->api.rb_obj_memsize_of,
    };
    slot_map_each(&t->objects, tally_one, &tally);
    if (opt->allocated)
        tally_allocated(t, &rows, opt->since);
    for (size_t i = 0; i < rows.count; i++) {
        rows.rows[i].name = rows.names.len;
        ruby_class_name(&t->api, &maps, rows.rows[i].klass, rows.rows[i].type, &rows.names);
        out_char(&rows.names, '\0');
    }
    if (rows.names.error || rows.failed) {
        status = MEMPROF_NO_MEMORY;
    } else {
        unsigned scale = t->config.sample;
        struct row_order order = { &rows, &t->sites, opt->sort };
        if (!opt->unsorted)
            sort_items(rows.rows, rows.count, sizeof *rows.rows, row_cmp, &order);
        write_header(o, opt);
        write_rows(o, &rows, &t->sites, opt, scale);
        if (opt->strings) {
            out_str(o, "== memprof: live strings (file:line value) ==\n");
            slot_map_each(&t->objects, write_string_one,
                          &(struct strings_pass){ .t = t, .maps = &maps, .opt = opt, .o = o });
        }
        if (scale > 1) {
            out_str(o, "memprof: sampled 1 in ");
            out_u64(o, scale);
            out_str(o, " allocations: each count is k sampled objects x ");
            out_u64(o, scale);
            out_str(o, ", within about +-2*sqrt(k)*");
            out_u64(o, scale);
            out_str(o, " of the true count (95%)\n");
        }
        if (opt->bytes && !t->api.rb_obj_memsize_of)
            out_str(o, "memprof: warning: this Ruby has no rb_obj_memsize_of: bytes are 0\n");
        if (!ruby_tracer_running() && t->objects.count &&
            t->api.rb_gc_count() != t->gc_count_at_stop) {
            /* Without recording, a new object at a dead one's address (same
             * type and class) cannot be told from it. */
            out_str(o, "memprof: warning: recording is stopped and the GC has run since: "
                       "objects made since may be counted in place of dead ones at their address\n");
        }
        if (t->unfollowed) {
            out_str(o, "memprof: warning: ");
            out_u64(o, t->unfollowed);
            out_str(o, " GC compactions could not be followed (out of memory): rows may miss moved objects\n");
        }
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

enum memprof_status ruby_tracer_where(struct out *o, uintptr_t addr, bool *found)
{
    struct ruby_tracer *t = &ruby_tracer;
    *found = false;
    if (!ruby_tracer_available())
        return MEMPROF_NOT_RUBY;
    if (!spin_trylock_report(&t->lock))
        return MEMPROF_BUSY;
    struct slot_entry entry;
    const struct slot_entry *e = slot_map_get(&t->objects, addr, &entry) ? &entry : NULL;
    struct maps maps;
    if (e && maps_load(&maps) == 0) {
        const struct intern_tuple *origin = intern_get(&t->origins, e->origin);
        uint32_t site = (uint32_t)origin->a;
        VALUE klass = ruby_live_class(&t->api, &maps, e, (VALUE)origin->b);
        *found = true;
        write_site(o, &t->sites, site);
        ruby_class_name(&t->api, &maps, klass == RUBY_NOT_LIVE ? (VALUE)origin->b : klass,
                   RUBY_AUX_TYPE(e->aux), o);
        if (klass == RUBY_NOT_LIVE)
            out_str(o, " (dead: the object there is no longer the one recorded)");
        out_char(o, '\n');
        write_callers(o, &t->sites, site, 0);
        maps_release(&maps);
    }
    spin_unlock(&t->lock);
    return MEMPROF_OK;
}
