#include "ruby.h"
#include "ruby_state.h"
#include "../hook/got.h"
#include "../util/reentry.h"
#include <dlfcn.h>
#include <pthread.h>

struct ruby_tracer ruby_tracer;

static bool api_resolved, api_present, running;
static bool end_proc_scheduled;
static void (*exit_callback)(void);

static void record(VALUE obj);

/* Every hooked allocator, once. Each hook is declared with the allocator's
 * own function type, so a prototype mismatch is a compile error. */
#define RUBY_ALLOCATOR_HOOKS(X)                                                              \
    X(rb_wb_protected_newobj_of, rb_wb_newobj_fn, (VALUE klass, VALUE flags, size_t size),   \
      (klass, flags, size))                                                                  \
    X(rb_wb_unprotected_newobj_of, rb_wb_newobj_fn, (VALUE klass, VALUE flags, size_t size), \
      (klass, flags, size))                                                                  \
    X(rb_ec_wb_protected_newobj_of, rb_ec_wb_newobj_fn,                                      \
      (void *ec, VALUE klass, VALUE flags, size_t size), (ec, klass, flags, size))           \
    X(rb_newobj_of, rb_newobj_fn, (VALUE klass, VALUE flags), (klass, flags))

#define DEFINE_HOOK(name, fn_type, params, args) \
    static fn_type *next_##name;                 \
    static fn_type hook_##name;                  \
    static VALUE hook_##name params              \
    {                                            \
        VALUE obj = next_##name args;            \
        record(obj);                             \
        return obj;                              \
    }
RUBY_ALLOCATOR_HOOKS(DEFINE_HOOK)

#define HOOK_ENTRY(name, fn_type, params, args) \
    { .symbol = #name, .replacement = (void *)hook_##name, .next = (void **)&next_##name },
static struct got_hook hooks[] = { RUBY_ALLOCATOR_HOOKS(HOOK_ENTRY) };
#define HOOK_COUNT (sizeof hooks / sizeof hooks[0])

bool ruby_tracer_available(void)
{
    if (api_resolved)
        return api_present;
    struct ruby_api *api = &ruby_tracer.api;
#define RESOLVE(fn) (*(void **)&api->fn = dlsym(RTLD_DEFAULT, #fn)) != NULL
    api_present = RESOLVE(rb_sourcefile) && RESOLVE(rb_sourceline) &&
                  RESOLVE(rb_class_path_cached) && RESOLVE(rb_string_value_ptr) &&
                  RESOLVE(rb_objspace_markable_object_p) && RESOLVE(rb_during_gc) &&
                  RESOLVE(rb_postponed_job_register_one) && RESOLVE(rb_set_end_proc);
#undef RESOLVE
    for (size_t i = 0; api_present && i < HOOK_COUNT; i++)
        api_present = dlsym(RTLD_DEFAULT, hooks[i].symbol) != NULL;
    api_resolved = true;
    return api_present;
}

static void end_proc(VALUE unused)
{
    (void)unused;
    if (exit_callback)
        exit_callback();
}

/* Runs at a Ruby safe point, where rb_set_end_proc may allocate. */
static void register_end_proc(void *unused)
{
    (void)unused;
    ruby_tracer.api.rb_set_end_proc(end_proc, 0);
}

static void record(VALUE obj)
{
    if (!__atomic_load_n(&running, __ATOMIC_RELAXED) || !reentry_enter())
        return;
    struct ruby_tracer *t = &ruby_tracer;
    const struct ruby_basic *basic = (const struct ruby_basic *)obj;
    unsigned type = (unsigned)(basic->flags & RUBY_T_MASK);
    const char *file = t->api.rb_sourcefile();
    int line = file ? t->api.rb_sourceline() : 0;
    if (file && !end_proc_scheduled && exit_callback) {
        /* The first allocation made by Ruby code: the VM is up, end procs work. */
        end_proc_scheduled = true;
        t->api.rb_postponed_job_register_one(0, register_end_proc, NULL);
    }

    spin_lock(&t->lock);
    uint32_t site = sites_intern(&t->sites, file ? file : "<internal>", (uint32_t)(line < 0 ? 0 : line));
    /* An address already tracked means its previous object died: replaced. */
    if (site == SITE_NONE ||
        addr_table_put(&t->objects, obj, site, type, basic->klass) == ADDR_PUT_NO_MEMORY)
        t->dropped++;
    spin_unlock(&t->lock);
    reentry_leave();
}

static void register_atfork(void)
{
    pthread_atfork(NULL, NULL, ruby_tracer_after_fork);
}

enum ruby_status ruby_tracer_start(void (*at_exit)(void))
{
    static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
    if (!ruby_tracer_available())
        return RUBY_NOT_RUBY;
    if (running)
        return RUBY_OK;
    exit_callback = at_exit;
    pthread_once(&atfork_once, register_atfork);
    for (size_t i = 0; i < HOOK_COUNT; i++) {
        if (got_hook_install(&hooks[i]) != 0) {
            while (i-- > 0)
                got_hook_remove(&hooks[i]);
            return RUBY_HOOK_FAILED;
        }
    }
    __atomic_store_n(&running, true, __ATOMIC_RELEASE);
    return RUBY_OK;
}

void ruby_tracer_stop(void)
{
    if (!running)
        return;
    __atomic_store_n(&running, false, __ATOMIC_RELEASE);
    for (size_t i = HOOK_COUNT; i-- > 0;)
        got_hook_remove(&hooks[i]);
}

bool ruby_tracer_running(void)
{
    return running;
}

enum ruby_status ruby_tracer_reset(void)
{
    struct ruby_tracer *t = &ruby_tracer;
    if (!ruby_tracer_available())
        return RUBY_NOT_RUBY;
    if (!spin_trylock(&t->lock))
        return RUBY_BUSY;
    addr_table_free(&t->objects);
    sites_free(&t->sites);
    t->dropped = 0;
    spin_unlock(&t->lock);
    return RUBY_OK;
}

void ruby_tracer_after_fork(void)
{
    /* Only the forking thread survives: a lock another thread held is void. */
    spin_reset(&ruby_tracer.lock);
}
