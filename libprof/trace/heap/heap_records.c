/* A thread's record in the C heap tracer (heap_thread.h): made for the
 * thread's first allocation, given up when the thread exits, and taken by a
 * thread started later.
 *
 * A record outlives its thread, because the blocks it holds do. Threads
 * that come and go (one per request, or per task) would otherwise leave a
 * record each: 100 KiB or more with its young slots, 2.3 GB after 20,000
 * threads. So a new thread takes the record of one that ended, with the
 * blocks it still holds: they are the new thread's to free as its own, and a
 * report finds them where they were. The new thread gets a serial of its
 * own, so the rows by thread stay each thread's; who held each serial is
 * kept apart, 24 bytes a serial (heap.identities).
 *
 * A record is taken only once the kernel says its thread is gone: after its
 * key's destructor gave the record up, the thread may still free (another
 * key's destructor), and a record has one writer. */
#include "heap.h"
#include "heap_hooks.h"
#include "heap_thread.h"
#include "../../util/pages.h"
#include "../../util/tasks.h"
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>

/* Records given up whose thread may still be on its way out, each asked of
 * the kernel (a syscall): past these, a new record. */
#define TAKE_TRIES 4

static size_t identities_bytes(void)
{
    return (MAX_THREAD_SERIAL + 1) * sizeof(struct heap_identity);
}

/* Mapped once, its pages touched as serials are handed out. */
static struct heap_identity *identities(void)
{
    struct heap_identity *ids = __atomic_load_n(&heap.identities, __ATOMIC_ACQUIRE);
    if (ids)
        return ids;
    struct heap_identity *fresh = pages_alloc(identities_bytes());
    if (!fresh)
        return NULL;
    if (__atomic_compare_exchange_n(&heap.identities, &ids, fresh, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return fresh;
    pages_free(fresh, identities_bytes());
    return ids;
}

static struct heap_identity *identity_at(uint32_t serial)
{
    struct heap_identity *ids = __atomic_load_n(&heap.identities, __ATOMIC_ACQUIRE);
    return ids && serial && serial <= MAX_THREAD_SERIAL ? &ids[serial] : NULL;
}

const struct heap_identity *heap_identity_of(uint32_t serial)
{
    return identity_at(serial);
}

static uint32_t last_serial(uint32_t count)
{
    return count < MAX_THREAD_SERIAL ? count : MAX_THREAD_SERIAL;
}

uint32_t heap_serials(void)
{
    return last_serial(__atomic_load_n(&heap.thread_count, __ATOMIC_ACQUIRE));
}

size_t heap_identities_bytes(void)
{
    if (!__atomic_load_n(&heap.identities, __ATOMIC_ACQUIRE))
        return 0;
    return ((size_t)heap_serials() + 1) * sizeof(struct heap_identity);
}

/* A record given up whose thread is gone, claimed; NULL when none is (yet).
 * Claimed first, then asked about: the thread that gave it up is then the
 * last that held it, not one that took it since and left it again. */
static struct heap_thread *take_given_up(void)
{
    pid_t self = gettid();
    unsigned tries = 0;
    for (struct heap_thread *t = __atomic_load_n(&heap.threads, __ATOMIC_ACQUIRE); t && tries < TAKE_TRIES;
         t = t->next) {
        bool vacant = true;
        if (!__atomic_load_n(&t->vacant, __ATOMIC_RELAXED) ||
            !__atomic_compare_exchange_n(&t->vacant, &vacant, false, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            continue;
        tries++;
        /* Our own tid: its thread is gone, tids are unique among the living. */
        if (t->tid == self || tasks_gone(t->tid)) {
            __atomic_thread_fence(__ATOMIC_SEQ_CST);   /* its last writes before ours */
            /* At once: a report that finds every record's task gone or its
             * own reads the tables as at rest (heap_report.c). */
            __atomic_store_n(&t->tid, self, __ATOMIC_SEQ_CST);
            return t;
        }
        __atomic_store_n(&t->vacant, true, __ATOMIC_RELEASE);
    }
    return NULL;
}

/* What a record remembers of its last thread's allocations and stack: the
 * origins it found are keyed by that thread's serial, the memos by its
 * stack. */
static void forget_last_thread(struct heap_thread *t)
{
    __atomic_store_n(&t->last_key, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&t->last_site, 0, __ATOMIC_RELAXED);
    t->last_link_key = t->last_link = 0;
    t->last_link_origin = 0;
    memset(t->memos, 0, sizeof t->memos);
    t->entry_pc = t->entry_cfa = t->entry_bp = 0;
    t->charge_site = NULL;
    t->charge_min = t->charge_max = 0;
    t->charge_sample_left = 0;
    t->origins_from = t->origin_count;
}

static struct heap_thread *new_record(void)
{
    struct heap_thread *t = pages_alloc_filled(sizeof *t);
    if (!t)
        return NULL;
    if (!(t->callers = pages_alloc(CALLER_CACHE * sizeof *t->callers))) {
        pages_free(t, sizeof *t);
        return NULL;
    }
    t->blocks.spill = &t->blocks_spill;
    return t;
}

struct heap_thread *heap_record_take(void)
{
    struct heap_thread *t = take_given_up();
    bool taken = t != NULL;
    if (taken)
        forget_last_thread(t);
    else if (!(t = new_record()))
        return NULL;
    uint32_t serial = last_serial(__atomic_add_fetch(&heap.thread_count, 1, __ATOMIC_RELAXED));
    pid_t tid = gettid();
    char name[16] = "";
    prctl(PR_GET_NAME, name);   /* for a core; a report asks /proc while the thread runs */
    struct heap_identity *id = identities() ? &heap.identities[serial] : NULL;
    if (id) {
        id->tid = tid;
        memcpy(id->name, name, sizeof name);
        __atomic_store_n(&id->exited, false, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&t->serial, serial, __ATOMIC_RELAXED);
    __atomic_store_n(&t->tid, tid, __ATOMIC_RELAXED);
    memcpy(t->name, name, sizeof name);
    __atomic_store_n(&t->exited, false, __ATOMIC_RELEASE);
    t->sample_state = (heap.sample_seed ^ (uint64_t)serial * 0x9E3779B97F4A7C15ull) | 1;
    if (heap.exit_key_made)
        pthread_setspecific(heap.exit_key, t);   /* no malloc for the first 32 keys */
    if (!taken) {
        struct heap_thread *top = __atomic_load_n(&heap.threads, __ATOMIC_ACQUIRE);
        do
            t->next = top;
        while (!__atomic_compare_exchange_n(&heap.threads, &top, t, true, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE));
    }
    return t;
}

void heap_record_give_up(void *record)
{
    struct heap_thread *t = record;
    prctl(PR_GET_NAME, t->name);   /* its /proc entry goes with it */
    t->name[sizeof t->name - 1] = '\0';
    struct heap_identity *id = identity_at(t->serial);
    if (id) {
        memcpy(id->name, t->name, sizeof id->name);
        __atomic_store_n(&id->exited, true, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&t->exited, true, __ATOMIC_RELEASE);
    /* Its unwinding rules go (their memos are of its stack; the next thread
     * to take the record makes new ones as it needs them). Its site table
     * stays for that thread: an entry is checked against the origin's key,
     * which has the serial. */
    struct unwind_cache *rules = t->unwind;
    t->unwind = NULL;
    if (rules && t == heap_my_thread)
        pages_free(rules, sizeof *rules);
    if (t == heap_my_thread)
        __atomic_store_n(&t->vacant, true, __ATOMIC_RELEASE);
}

void heap_records_after_fork(void)
{
    /* Only the forking thread survives. The others' records are never
     * taken here: one given up may have been mid-write in a thread on its
     * way out. */
    for (struct heap_thread *t = heap.threads; t; t = t->next) {
        if (t == heap_my_thread)
            continue;
        t->exited = true;
        t->vacant = false;
        struct heap_identity *id = identity_at(t->serial);
        if (id)
            id->exited = true;
    }
    if (heap_my_thread) {
        heap_my_thread->tid = gettid();
        struct heap_identity *id = identity_at(heap_my_thread->serial);
        if (id)
            id->tid = heap_my_thread->tid;
    }
}
