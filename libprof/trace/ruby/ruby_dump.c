/* The live objects memprof recorded, one JSON object per line in the schema
 * of ObjectSpace.dump_all (address, type, class, file, line, generation,
 * memsize; name for classes and modules), so that tools made for those
 * dumps (heapy) read it. Like the report: no malloc, no Ruby allocation, a
 * try-lock, every read of the heap checked against the memory map.
 *
 * Objects made before recording started are not in it (dump_all lists
 * them without file and line); the classes the dumped objects name are,
 * with their names, so that a reader can name them. */
#include "ruby.h"
#include "ruby_state.h"
#include "../../util/maps.h"
#include "../../util/pages.h"
#include <string.h>
#include <unistd.h>

/* A JSON string: quotes, backslashes and control characters escaped. */
static void json_string(struct out *o, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    out_char(o, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            out_char(o, '\\');
            out_char(o, (char)c);
        } else if (c < 0x20) {
            out_str(o, "\\u00");
            out_char(o, hex[c >> 4]);
            out_char(o, hex[c & 15]);
        } else {
            out_char(o, (char)c);
        }
    }
    out_char(o, '"');
}

/* The classes named so far, to list each once at the end. */
struct class_set {
    VALUE *slots;
    size_t mask, count, bytes;
};

static bool class_set_add(struct class_set *c, VALUE klass)
{
    if (!c->slots || c->count * 2 >= c->mask) {
        size_t cap = c->slots ? (c->mask + 1) * 2 : 1024, bytes = cap * sizeof(VALUE);
        VALUE *slots = pages_alloc(bytes);
        if (!slots)
            return false;
        for (size_t i = 0; c->slots && i <= c->mask; i++) {
            if (!c->slots[i])
                continue;
            size_t j = (size_t)(c->slots[i] * 0x9E3779B97F4A7C15ull >> 20) & (cap - 1);
            while (slots[j])
                j = (j + 1) & (cap - 1);
            slots[j] = c->slots[i];
        }
        if (c->slots)
            pages_free(c->slots, c->bytes);
        c->slots = slots;
        c->mask = cap - 1;
        c->bytes = bytes;
    }
    size_t i = (size_t)(klass * 0x9E3779B97F4A7C15ull >> 20) & c->mask;
    for (; c->slots[i]; i = (i + 1) & c->mask)
        if (c->slots[i] == klass)
            return false;
    c->slots[i] = klass;
    c->count++;
    return true;
}

struct dump {
    const struct ruby_tracer *t;
    const struct maps *maps;
    struct out *o;
    struct class_set named, listed;   /* classes named by objects; classes dumped as objects */
    unsigned long objects;
    bool progress;                    /* stderr is a terminal */
};

/* "T_STRING" as dump_all writes it: "STRING". */
static const char *json_type(unsigned type)
{
    const char *n = ruby_type_name(type & 0xff);
    return strncmp(n, "T_", 2) == 0 ? n + 2 : n;
}

static void write_name(struct dump *d, VALUE obj, unsigned type)
{
    char name[512];
    struct out n;
    out_init_fd(&n, -1, name, sizeof name);
    ruby_class_name(&d->t->api, d->maps, obj, type, &n);
    out_finish(&n);
    out_str(d->o, ", \"name\":");
    json_string(d->o, name, strlen(name));
}

static void show_progress(struct dump *d)
{
    if (!d->progress || d->objects % 100000)
        return;
    char line[64];
    struct out p;
    out_init_fd(&p, STDERR_FILENO, line, sizeof line);
    out_str(&p, "\rmemprof: dumping: ");
    out_u64(&p, d->objects);
    out_str(&p, " objects");
    out_finish(&p);
}

static void dump_one(const struct slot_entry *e, void *ctx)
{
    struct dump *d = ctx;
    const struct ruby_tracer *t = d->t;
    const struct intern_tuple *origin = intern_get(&t->origins, e->origin);
    VALUE klass = ruby_live_class(&t->api, d->maps, e, (VALUE)origin->b);
    if (klass == RUBY_NOT_LIVE)
        return;
    unsigned type = RUBY_AUX_TYPE(e->aux);
    uint32_t site = (uint32_t)origin->a;
    struct out *o = d->o;
    out_str(o, "{\"address\":\"");
    out_hex(o, e->key);
    out_str(o, "\", \"type\":\"");
    out_str(o, json_type(type));
    out_char(o, '"');
    if (klass && type != RUBY_T_IMEMO) {
        out_str(o, ", \"class\":\"");
        out_hex(o, klass);
        out_char(o, '"');
        class_set_add(&d->named, klass);
    }
    if (type == RUBY_T_CLASS || type == RUBY_T_MODULE) {
        bool singleton = type == RUBY_T_CLASS && (((const struct ruby_basic *)e->key)->flags & RUBY_FL_SINGLETON);
        if (!singleton)
            write_name(d, e->key, type);
        class_set_add(&d->listed, e->key);
    }
    const char *file = sites_file(&t->sites, site);
    out_str(o, ", \"file\":");
    json_string(o, file, strlen(file));
    out_str(o, ", \"line\":");
    out_u64(o, sites_line(&t->sites, site));
    uint64_t generation = ruby_epoch_generation(t, RUBY_AUX_EPOCH(e->aux));
    if (generation != RUBY_GENERATION_UNKNOWN) {
        out_str(o, ", \"generation\":");
        out_u64(o, generation);
    }
    if (t->api.rb_obj_memsize_of) {
        out_str(o, ", \"memsize\":");
        out_u64(o, t->api.rb_obj_memsize_of(e->key));
    }
    out_str(o, "}\n");
    d->objects++;
    show_progress(d);
}

/* The classes objects named that were not dumped themselves (made before
 * recording started): their address, type and name only. */
static void dump_named_classes(struct dump *d)
{
    for (size_t i = 0; d->named.slots && i <= d->named.mask; i++) {
        VALUE k = d->named.slots[i];
        if (!k || !class_set_add(&d->listed, k) || !maps_readable(d->maps, k, sizeof(struct ruby_basic)))
            continue;
        unsigned type = (unsigned)(((const struct ruby_basic *)k)->flags & RUBY_T_MASK);
        if (type != RUBY_T_CLASS && type != RUBY_T_MODULE)
            continue;
        out_str(d->o, "{\"address\":\"");
        out_hex(d->o, k);
        out_str(d->o, "\", \"type\":\"");
        out_str(d->o, json_type(type));
        out_char(d->o, '"');
        write_name(d, k, type);
        out_str(d->o, "}\n");
    }
}

enum memprof_status ruby_tracer_dump(struct out *o)
{
    struct ruby_tracer *t = &ruby_tracer;
    enum memprof_status locked = ruby_lock_for_reading();
    if (locked != MEMPROF_OK)
        return locked;
    struct maps maps;
    enum memprof_status status = MEMPROF_OK;
    if (maps_load(&maps) != 0) {
        spin_unlock(&t->lock);
        return MEMPROF_NO_MEMORY;
    }
    struct dump d = { .t = t, .maps = &maps, .o = o, .progress = isatty(STDERR_FILENO) == 1 };
    slot_map_each(&t->objects, dump_one, &d);
    dump_named_classes(&d);
    if (d.progress && d.objects >= 100000) {
        char line[64];
        struct out p;
        out_init_fd(&p, STDERR_FILENO, line, sizeof line);
        out_str(&p, "\rmemprof: dumped ");
        out_u64(&p, d.objects);
        out_str(&p, " objects\n");
        out_finish(&p);
    }
    if (d.named.slots)
        pages_free(d.named.slots, d.named.bytes);
    if (d.listed.slots)
        pages_free(d.listed.slots, d.listed.bytes);
    maps_release(&maps);
    spin_unlock(&t->lock);
    return status;
}
