/* The thread registry (threads.h).
 *
 * Records are handed out by one atomic counter from chunks mapped on demand
 * and never given back: a debugger or `memprof threads -p` reads them while
 * the process runs, and a record's address stays valid for good. Each field
 * is written by one thread at a time (the creator until the thread runs,
 * then the thread itself), and `state` is stored last.
 *
 * The hook wraps the start routine: the new thread first runs
 * thread_begins (its tid, stack, name, heap tables, the created event),
 * then the program's routine. Its exit is seen by a thread-specific key's
 * destructor, which glibc runs on every way out of a thread. */
#include "threads.h"
#include "heap/heap.h"
#include "heap/heap_ruby.h"
#include "ruby/ruby.h"
#include "../memprof_debugger.h"
#include "../hook/got.h"
#include "../util/pages.h"
#include "../util/reentry.h"
#include "../util/tasks.h"
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT struct memprof_thread_registry memprof_thread_registry = {
    .version = MEMPROF_THREAD_RECORD_VERSION,
    .record_size = sizeof(struct memprof_thread),
    .chunk_size = MEMPROF_THREAD_CHUNK,
};

/* memprof.gdbinit's memprof-thread-events reads these by offset. */
_Static_assert(offsetof(struct memprof_thread, stack_size) == 40, "stack_size");
_Static_assert(offsetof(struct memprof_thread, allocations) == 48, "allocations");
_Static_assert(offsetof(struct memprof_thread, allocated_bytes) == 56, "allocated_bytes");
_Static_assert(offsetof(struct memprof_thread, site) == 64, "site");
_Static_assert(offsetof(struct memprof_thread_event, thread) == 8, "thread");

bool threads_following;

static struct {
    bool prepared;
    pthread_key_t exit_key;
    bool exit_key_made;
} threads;

static __thread struct memprof_thread *my_record __attribute__((tls_model("initial-exec")));

/* Where a debugger stops: never inlined or elided, and it leaves the record
 * where the ABI put it (%rdi). */
EXPORT __attribute__((noinline, noipa)) void memprof_thread_event(const struct memprof_thread_event *event)
{
    __asm__ volatile("" : : "r"(event) : "memory");
}

static void announce(uint32_t kind, const struct memprof_thread *t)
{
    struct memprof_thread_event e = { MEMPROF_THREAD_RECORD_VERSION, kind, t };
    memprof_thread_event(&e);
}

/* A new record, zeroed, or NULL when the registry is full or out of memory. */
static struct memprof_thread *claim_record(void)
{
    struct memprof_thread_registry *r = &memprof_thread_registry;
    uint32_t n = __atomic_fetch_add(&r->count, 1, __ATOMIC_ACQ_REL);
    size_t chunk = n / MEMPROF_THREAD_CHUNK;
    if (chunk >= MEMPROF_THREAD_CHUNKS) {
        __atomic_store_n(&r->count, MEMPROF_THREAD_CHUNKS * MEMPROF_THREAD_CHUNK, __ATOMIC_RELEASE);
        return NULL;
    }
    struct memprof_thread *c = __atomic_load_n(&r->chunks[chunk], __ATOMIC_ACQUIRE);
    if (!c) {
        size_t bytes = MEMPROF_THREAD_CHUNK * sizeof *c;
        struct memprof_thread *fresh = pages_alloc(bytes);
        if (!fresh)
            return NULL;   /* the number stays unused: readers skip state 0 */
        if (__atomic_compare_exchange_n(&r->chunks[chunk], &c, fresh, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
            c = fresh;
        else
            pages_free(fresh, bytes);
    }
    struct memprof_thread *t = &c[n % MEMPROF_THREAD_CHUNK];
    t->number = n + 1;
    return t;
}

/* Every record handed out, in order, through `visit`. */
static void each_record(void (*visit)(struct memprof_thread *, void *), void *ctx)
{
    struct memprof_thread_registry *r = &memprof_thread_registry;
    uint32_t count = __atomic_load_n(&r->count, __ATOMIC_ACQUIRE);
    for (uint32_t n = 0; n < count; n++) {
        struct memprof_thread *c = __atomic_load_n(&r->chunks[n / MEMPROF_THREAD_CHUNK], __ATOMIC_ACQUIRE);
        if (c && __atomic_load_n(&c[n % MEMPROF_THREAD_CHUNK].state, __ATOMIC_ACQUIRE) != MEMPROF_THREAD_UNUSED)
            visit(&c[n % MEMPROF_THREAD_CHUNK], ctx);
    }
}

static void set_state(struct memprof_thread *t, uint32_t state)
{
    __atomic_store_n(&t->state, state, __ATOMIC_RELEASE);
}

/* The creation site: the Ruby line running, else the C caller by its
 * dynamic symbol (dladdr: no malloc) or its object and offset. */
static void describe_site(struct memprof_thread *t, uintptr_t call_site)
{
    struct out o;
    out_init_fd(&o, -1, t->site, sizeof t->site);
    if (!heap_ruby_current_site(&o)) {
        Dl_info info;
        if (dladdr((void *)(call_site - 1), &info) && info.dli_fname) {
            const char *base = strrchr(info.dli_fname, '/');
            base = base ? base + 1 : info.dli_fname;
            if (info.dli_sname) {
                out_str(&o, info.dli_sname);
                out_char(&o, '+');
                out_hex(&o, call_site - (uintptr_t)info.dli_saddr);
                out_str(&o, " in ");
                out_str(&o, *base ? base : "the program");
            } else {
                out_str(&o, *base ? base : "the program");
                out_char(&o, '+');
                out_hex(&o, call_site - (uintptr_t)info.dli_fbase);
            }
        } else {
            out_hex(&o, call_site);
        }
    }
    out_finish(&o);   /* truncated at the field's size, NUL-terminated */
}

/* The calling thread's stack: lowest address and size. */
static void own_stack(struct memprof_thread *t)
{
    pthread_attr_t a;
    void *base;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &a) != 0)
        return;
    if (pthread_attr_getstack(&a, &base, &size) == 0) {
        t->stack_base = (uintptr_t)base;
        t->stack_size = size;
    }
    pthread_attr_destroy(&a);
}

static void own_name(struct memprof_thread *t)
{
    char name[16] = "";
    prctl(PR_GET_NAME, name);
    memcpy(t->name, name, sizeof t->name);
    t->name[sizeof t->name - 1] = '\0';
}

/* A thread's exit, on every path out (the key's destructor). */
static void thread_ends(void *record)
{
    struct memprof_thread *t = record;
    bool entered = reentry_enter();
    uint64_t count, bytes;
    if (heap_current_thread_totals(&count, &bytes)) {
        if (t->stack_size && count && bytes >= t->stack_size) {   /* its own stack is not its allocation */
            count--;
            bytes -= t->stack_size;
        }
        t->allocations = count;
        t->allocated_bytes = bytes;
    }
    own_name(t);
    my_record = NULL;
    if (entered)
        reentry_leave();
    if (t->stack_size && heap_tracer_running())   /* (it enters the runtime itself) */
        heap_note_custom_free((void *)(uintptr_t)t->stack_base);
    set_state(t, MEMPROF_THREAD_EXITED);
    announce(MEMPROF_THREAD_DIED, t);
}

/* The record is the thread's own from now on. */
static void adopt(struct memprof_thread *t)
{
    my_record = t;
    t->tid = (int32_t)gettid();
    own_stack(t);
    own_name(t);
    if (threads.exit_key_made)
        pthread_setspecific(threads.exit_key, t);   /* no malloc for the first 32 keys */
}

/* The new thread's first code: its record, then the program's routine. */
static void *thread_begins(void *record)
{
    struct memprof_thread *t = record;
    bool entered = reentry_enter();
    adopt(t);
    if (entered)
        reentry_leave();
    /* These enter the runtime themselves. */
    heap_tracer_thread_begin();
    if (t->stack_size && heap_tracer_running())   /* its stack, made where it was created */
        heap_note_custom_alloc((void *)(uintptr_t)t->stack_base, t->stack_size, (void *)(uintptr_t)t->call_site);
    set_state(t, MEMPROF_THREAD_RUNNING);
    announce(MEMPROF_THREAD_CREATED, t);
    void *(*start)(void *) = (void *(*)(void *))(uintptr_t)t->start_routine;
    return start((void *)(uintptr_t)t->arg);
}

static int (*next_pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

static int hook_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *),
                               void *arg)
{
    if (!__atomic_load_n(&threads_following, __ATOMIC_ACQUIRE))
        return next_pthread_create(thread, attr, start, arg);
    bool entered = reentry_enter();
    struct memprof_thread *t = claim_record();
    if (t) {
        t->creator_tid = (int32_t)gettid();
        t->start_routine = (uintptr_t)start;
        t->arg = (uintptr_t)arg;
        /* std::thread's pthread_create is libstdc++'s: the thread is the
         * user's, made where the first frame outside the wrappers is. */
        t->call_site = heap_caller_outside_wrappers((uintptr_t)__builtin_return_address(0));
        describe_site(t, t->call_site);
        set_state(t, MEMPROF_THREAD_STARTING);
    }
    if (entered)
        reentry_leave();
    if (!t)
        return next_pthread_create(thread, attr, start, arg);
    int rc = next_pthread_create(thread, attr, thread_begins, t);
    if (rc != 0)
        set_state(t, MEMPROF_THREAD_FAILED);
    return rc;
}

_Static_assert(__builtin_types_compatible_p(__typeof__(&hook_pthread_create), __typeof__(&pthread_create)),
               "pthread_create");

static struct got_hook create_hook = {
    .symbol = "pthread_create",
    .replacement = (void *)hook_pthread_create,
    .next = (void **)&next_pthread_create,
};

/* A thread that ran before memprof started: what /proc says of it. */
static void note_running_thread(pid_t tid, void *unused)
{
    (void)unused;
    struct memprof_thread *t = claim_record();
    if (!t)
        return;
    t->tid = (int32_t)tid;
    struct out o;
    out_init_fd(&o, -1, t->site, sizeof t->site);
    out_str(&o, tid == getpid() ? "(main thread)" : "(running before memprof started)");
    out_finish(&o);
    if (tid == gettid())
        adopt(t);
    else
        tasks_name(tid, t->name);
    set_state(t, MEMPROF_THREAD_RUNNING);
}

/* In a forked child only the forking thread lives on, under a new tid. */
static void after_fork_in_child(void)
{
    struct memprof_thread_registry *r = &memprof_thread_registry;
    uint32_t count = __atomic_load_n(&r->count, __ATOMIC_ACQUIRE);
    for (uint32_t n = 0; n < count; n++) {
        struct memprof_thread *c = r->chunks[n / MEMPROF_THREAD_CHUNK];
        struct memprof_thread *t = c ? &c[n % MEMPROF_THREAD_CHUNK] : NULL;
        if (t && t != my_record && (t->state == MEMPROF_THREAD_RUNNING || t->state == MEMPROF_THREAD_STARTING))
            t->state = MEMPROF_THREAD_EXITED;
    }
    if (my_record)
        my_record->tid = (int32_t)gettid();
}

static void prepare_once(void)
{
    pthread_atfork(NULL, NULL, after_fork_in_child);
    threads.exit_key_made = pthread_key_create(&threads.exit_key, thread_ends) == 0;
}

bool threads_start(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    if (__atomic_load_n(&threads_following, __ATOMIC_ACQUIRE))
        return true;
    bool entered = reentry_enter();
    pthread_once(&once, prepare_once);
    heap_ruby_enable();
    if (!threads.prepared) {
        tasks_each(note_running_thread, NULL);
        threads.prepared = true;
    }
    bool ok = got_hook_install(&create_hook) == 0;
    if (ok)
        __atomic_store_n(&threads_following, true, __ATOMIC_RELEASE);
    if (entered)
        reentry_leave();
    return ok;
}

void threads_stop(void)
{
    if (!__atomic_load_n(&threads_following, __ATOMIC_ACQUIRE))
        return;
    __atomic_store_n(&threads_following, false, __ATOMIC_RELEASE);
    got_hook_remove(&create_hook);
}

bool threads_running(void)
{
    return __atomic_load_n(&threads_following, __ATOMIC_ACQUIRE);
}

/* A thread memprof did not see start has no exit event: /proc tells. */
static bool still_running(const struct memprof_thread *t)
{
    return t->tid > 0 && !tasks_gone(t->tid);
}

static const char *state_name(const struct memprof_thread *t)
{
    switch (t->state) {
    case MEMPROF_THREAD_STARTING: return "starting";
    case MEMPROF_THREAD_RUNNING: return t->creator_tid || still_running(t) ? "running" : "exited";
    case MEMPROF_THREAD_EXITED: return "exited";
    case MEMPROF_THREAD_FAILED: return "failed";
    default: return "?";
    }
}

static void write_record(struct memprof_thread *t, void *ctx)
{
    struct out *o = ctx;
    uint64_t count = t->allocations, bytes = t->allocated_bytes;
    bool counted = t->state == MEMPROF_THREAD_EXITED ? count || bytes
                                                     : t->tid > 0 && heap_thread_totals(t->tid, &count, &bytes);
    out_u64_width(o, t->number, 5);
    out_char(o, ' ');
    out_u64_width(o, (uint64_t)(t->tid > 0 ? t->tid : 0), 8);
    out_str(o, "  ");
    const char *state = state_name(t);
    out_str(o, state);
    for (size_t i = strlen(state); i < 9; i++)
        out_char(o, ' ');
    if (t->stack_size) {
        out_u64_width(o, t->stack_size / 1024, 8);
        out_str(o, " KiB");
    } else {
        out_str(o, "       ? KiB");
    }
    if (counted) {
        out_u64_width(o, count, 10);
        out_u64_width(o, bytes, 12);
    } else {
        out_str(o, "         -           -");
    }
    out_str(o, "  ");
    out_str(o, t->site[0] ? t->site : "?");
    if (t->name[0]) {
        out_str(o, "  \"");
        out_str(o, t->name);
        out_char(o, '"');
    }
    out_char(o, '\n');
}

void threads_report(struct out *o)
{
    out_str(o, threads_running() ? "# memprof threads: following creation and exit\n"
                                 : "# memprof threads: not following new threads\n");
    out_str(o, "  Num      Tid  State       Stack    Allocs       Bytes  Created at  \"Name\"\n");
    each_record(write_record, o);
}

void threads_usage(unsigned long *records, unsigned long *bytes)
{
    struct memprof_thread_registry *r = &memprof_thread_registry;
    unsigned long chunks = 0;
    for (size_t c = 0; c < MEMPROF_THREAD_CHUNKS && __atomic_load_n(&r->chunks[c], __ATOMIC_ACQUIRE); c++)
        chunks++;
    *records = __atomic_load_n(&r->count, __ATOMIC_ACQUIRE);
    *bytes = chunks * MEMPROF_THREAD_CHUNK * sizeof(struct memprof_thread);
}

struct stack_sum {
    unsigned long count, bytes;
};

static void add_stack(struct memprof_thread *t, void *ctx)
{
    struct stack_sum *s = ctx;
    if (t->stack_size && t->state == MEMPROF_THREAD_RUNNING && (t->creator_tid || still_running(t))) {
        s->count++;
        s->bytes += t->stack_size;
    }
}

void threads_stacks(unsigned long *count, unsigned long *bytes)
{
    struct stack_sum s = { 0, 0 };
    each_record(add_stack, &s);
    *count = s.count;
    *bytes = s.bytes;
}
