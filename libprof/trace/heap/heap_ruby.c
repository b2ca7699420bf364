/* The Ruby line of a C heap block.
 *
 * The malloc hook reads this thread's execution context (ruby_current_ec, in
 * static TLS) and walks its control frames up to the nearest Ruby frame, as
 * rb_sourcefile does: a C method's frame (an extension's) has no line, its
 * Ruby caller has. That frame's saved pc names the call; a per-thread cache
 * maps it to a token until the next GC (an iseq freed, its pc reused). Only
 * on a miss is the VM asked for the file and line, which are interned under a
 * try-lock.
 *
 * When the VM may be read from a malloc hook:
 * - in a thread whose context the VM vouches for (ruby_thread.h): the main
 *   thread, or the one holding the GVL. A thread between two Ruby threads
 *   still names the finished one's context, which may be freed memory;
 * - until the VM's end procs run: after them ruby_vm_destruct tears the VM
 *   down;
 * - on a cache miss, not while the GC runs: compaction may be moving the
 *   path strings. A cached line names nothing in the Ruby heap. */
#include "heap_ruby.h"
#include "heap_thread.h"
#include "../ruby/ruby_thread.h"
#include "../../store/sites.h"
#include "../../util/fault.h"
#include "../../util/reentry.h"
#include "../../util/spinlock.h"

bool heap_ruby_found;   /* the process has a Ruby VM */

static struct {
    bool started;          /* a Ruby frame was seen: the end proc is asked for */
    bool ended;            /* the VM's end procs ran */
    spinlock_t lock;       /* guards heap_ruby_lines; hooks only try it */
} hr;
struct site_table heap_ruby_lines;

void heap_ruby_enable(void)
{
    if (heap_ruby_found || !ruby_tracer_available())
        return;
    ruby_site_find_ec();
    __atomic_store_n(&heap_ruby_found, true, __ATOMIC_RELEASE);
    heap_short_paths_refresh();
}

static void (*program_end)(void);

void heap_ruby_at_program_end(void (*fn)(void))
{
    program_end = fn;
}

static void at_vm_end(VALUE unused)
{
    (void)unused;
    if (program_end)
        program_end();
    __atomic_store_n(&hr.ended, true, __ATOMIC_RELEASE);
}

/* A postponed job: registering an end proc allocates, so it waits for a
 * Ruby safe point. memprof's own allocations there are not recorded. */
static void ask_for_end_proc(void *unused)
{
    (void)unused;
    bool in = reentry_enter();
    fault_guard_install();   /* in front of the VM's own handlers, installed by now */
    ruby_tracer.api.rb_set_end_proc(at_vm_end, 0);
    if (in)
        reentry_leave();
}

/* Ask the VM for the frame's file and line and intern them. The running
 * frame's pc is stepped as in ruby_site_capture, so that an instruction that
 * allocates names its own line, not the previous one. */
static uint32_t resolve(const char *frame, bool top)
{
    const struct ruby_api *api = &ruby_tracer.api;
    const VALUE **pc = (const VALUE **)frame;
    const VALUE *saved = *pc;
    if (top)
        *pc = saved + 1;
    const char *file = api->rb_sourcefile();
    int line = file ? api->rb_sourceline() : 0;
    if (top)
        *pc = saved;
    if (!file || !spin_trylock(&hr.lock))
        return 0;
    uint32_t site = sites_intern(&heap_ruby_lines, file, line < 0 ? 0 : (uint32_t)line, SITE_NONE);
    spin_unlock(&hr.lock);
    return site == SITE_NONE ? 0 : site + 1;
}

uint32_t heap_ruby_line(struct heap_ruby_cache *cache)
{
    if (!__atomic_load_n(&heap_ruby_found, __ATOMIC_ACQUIRE))
        return 0;
    const struct ruby_api *api = &ruby_tracer.api;
    if (!*api->ruby_current_vm_ptr || __atomic_load_n(&hr.ended, __ATOMIC_ACQUIRE))
        return 0;
    bool top = false;
    const char *frame = ruby_site_nearest_frame(ruby_thread_live_ec(api), &top, NULL);
    if (!frame)
        return 0;
    if (!__atomic_load_n(&hr.started, __ATOMIC_RELAXED) &&
        !__atomic_exchange_n(&hr.started, true, __ATOMIC_ACQ_REL))
        api->rb_postponed_job_register_one(0, ask_for_end_proc, NULL);

    const VALUE *pc = *(const VALUE *const *)frame + (top ? 1 : 0);
    size_t gc_count = api->rb_gc_count();
    __typeof__(cache->entries[0]) *e = &cache->entries[((uintptr_t)pc >> 3) % HEAP_RUBY_CACHE];
    if (e->pc == pc && e->gc_count == gc_count)
        return e->token;
    if (api->rb_during_gc())
        return 0;
    uint32_t token = resolve(frame, top);
    if (token)
        *e = (__typeof__(*e)){ pc, gc_count, token };
    return token;
}

bool heap_ruby_current_site(struct out *o)
{
    if (!__atomic_load_n(&heap_ruby_found, __ATOMIC_ACQUIRE))
        return false;
    const struct ruby_api *api = &ruby_tracer.api;
    if (!*api->ruby_current_vm_ptr || __atomic_load_n(&hr.ended, __ATOMIC_ACQUIRE) || api->rb_during_gc())
        return false;
    bool top = false;
    const char *frame = ruby_site_nearest_frame(ruby_thread_live_ec(api), &top, NULL);
    if (!frame)
        return false;
    const char *file = api->rb_sourcefile();
    if (!file)
        return false;
    int line = api->rb_sourceline();
    out_str(o, file);
    out_char(o, ':');
    out_u64(o, line < 0 ? 0 : (uint64_t)line);
    return true;
}

bool heap_ruby_lock_for_report(void)
{
    for (int i = 0; i < 1000; i++) {
        if (spin_trylock_report(&hr.lock))
            return true;
        cpu_relax();
    }
    return false;
}

void heap_ruby_unlock(void)
{
    spin_unlock(&hr.lock);
}

void heap_ruby_write(struct out *o, uint32_t token)
{
    out_str(o, sites_file(&heap_ruby_lines, token - 1));
    out_char(o, ':');
    out_u64(o, sites_line(&heap_ruby_lines, token - 1));
}

size_t heap_ruby_bytes(void)
{
    return sites_bytes(&heap_ruby_lines);
}

void heap_ruby_after_fork(void)
{
    spin_reset(&hr.lock);   /* a thread that held it is gone */
}
