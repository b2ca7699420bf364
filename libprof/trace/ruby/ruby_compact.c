/* GC.compact moves objects, and memprof's tables are keyed by address. Like
 * ObjectSpace's allocation tracer, memprof owns one T_DATA object whose type
 * has a dcompact callback: the GC calls it while updating references, when
 * every moved object's old slot is still a T_MOVED forwarding address, and
 * memprof re-keys its records (and the classes they name) there. */
#include "ruby_state.h"
#include "../../util/maps.h"
#include "../../util/reentry.h"

static void follow_compaction(void *unused);

static const struct ruby_data_type watcher_type = {
    .wrap_struct_name = "memprof/compaction_watcher",
    .function = { .dcompact = follow_compaction },
};
static char watcher_data;   /* DATA_PTR must be non-NULL for dcompact to run */
static bool watching;

void ruby_compact_watch(void)
{
    struct ruby_tracer *t = &ruby_tracer;
    if (watching)
        return;
    watching = true;
    VALUE obj = t->api.rb_data_typed_object_wrap(0, &watcher_data, &watcher_type);
    t->api.rb_gc_register_mark_object(obj);
}

/* Where the object at `v` went: its forwarding address when it moved and the
 * destination holds an object of the same type, else `v`. Every read is
 * checked against the memory map: a record may name a heap page long freed. */
struct follow { const struct maps *maps; const struct ruby_api *api; };

static VALUE follow_one(const struct follow *f, VALUE v, unsigned type)
{
    if (!v || (v & 7) || !maps_readable(f->maps, v, sizeof(struct ruby_basic)))
        return v;
    if ((((const struct ruby_basic *)v)->flags & RUBY_T_MASK) != RUBY_T_MOVED)
        return v;
    VALUE to = f->api->rb_gc_location(v);
    if (to == v || !to || (to & 7) || !maps_readable(f->maps, to, sizeof(struct ruby_basic)))
        return v;
    unsigned to_type = (unsigned)(((const struct ruby_basic *)to)->flags & RUBY_T_MASK);
    return to_type == type ? to : v;
}

static uintptr_t moved_object(const struct slot_entry *e, void *ctx)
{
    return follow_one(ctx, e->key, RUBY_AUX_TYPE(e->aux));
}

static void follow_compaction(void *unused)
{
    (void)unused;
    struct ruby_tracer *t = &ruby_tracer;
    struct maps maps;
    bool in = reentry_enter();
    spin_lock(&t->lock);
    if (maps_load(&maps) != 0) {
        t->unfollowed++;
        goto out;
    }
    struct follow f = { &maps, &t->api };
    int err = slot_map_remap(&t->objects, moved_object, &f);
    for (size_t id = 0; id < t->origins.count; id++) {
        struct intern_tuple *o = &t->origins.tuples[id];
        o->b = follow_one(&f, (VALUE)o->b, RUBY_T_CLASS);
    }
    if (err || intern_reindex(&t->origins) != 0)
        t->unfollowed++;
    else
        t->compactions++;
    maps_release(&maps);
out:
    spin_unlock(&t->lock);
    if (in)
        reentry_leave();
}
