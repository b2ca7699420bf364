/* The thread registry (memprof_debugger.h) and the runtime's state read from
 * a core (core_image.h): memprof-threads and memprof-status for a process
 * that is gone, written as the runtime writes them (trace/threads.c,
 * runtime/reports.c). A thread memprof did not see start is running when
 * the core has it (NT_PRSTATUS), as the runtime asks the kernel. */
#include "core_image.h"
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct registry {
    struct memprof_thread *records;
    uint32_t count;
};

/* The registry's records, checked against this memprof's layout. */
static bool read_registry(struct core_image *c, struct registry *r)
{
    struct memprof_thread_registry head;
    memset(r, 0, sizeof *r);
    if (!core_read(c, c->tables.thread_registry, &head, sizeof head, "the thread registry"))
        return false;
    if (head.version != MEMPROF_THREAD_RECORD_VERSION || head.record_size != sizeof(struct memprof_thread) ||
        head.chunk_size != MEMPROF_THREAD_CHUNK)
        return core_fail(c, "%s: the thread registry is version %u of %u-byte records; this memprof reads version %d",
                         c->path, head.version, head.record_size, MEMPROF_THREAD_RECORD_VERSION);
    if (head.count > (uint64_t)MEMPROF_THREAD_CHUNK * MEMPROF_THREAD_CHUNKS)
        return core_fail(c, "%s: the thread registry has %u records: damaged", c->path, head.count);
    if (!(r->records = calloc(head.count + 1, sizeof *r->records)))
        return core_fail(c, "out of memory");
    for (uint32_t n = 0; n < head.count;) {
        uint32_t in_chunk = MEMPROF_THREAD_CHUNK - n % MEMPROF_THREAD_CHUNK;
        if (in_chunk > head.count - n)
            in_chunk = head.count - n;
        uint64_t chunk = (uint64_t)(uintptr_t)head.chunks[n / MEMPROF_THREAD_CHUNK];
        if (chunk && !core_read(c, chunk + (uint64_t)(n % MEMPROF_THREAD_CHUNK) * sizeof *r->records, &r->records[n],
                                in_chunk * sizeof *r->records, "the thread records"))
            return false;
        n += in_chunk;
    }
    r->count = head.count;
    return true;
}

static bool core_has_thread(const struct core_image *c, int32_t tid)
{
    for (size_t i = 0; i < c->notes.tid_count; i++)
        if (c->notes.tids[i] == tid)
            return true;
    return false;
}

static const char *state_name(const struct core_image *c, const struct memprof_thread *t)
{
    switch (t->state) {
    case MEMPROF_THREAD_STARTING: return "starting";
    case MEMPROF_THREAD_RUNNING:
        return t->creator_tid || (t->tid > 0 && core_has_thread(c, t->tid)) ? "running" : "exited";
    case MEMPROF_THREAD_EXITED: return "exited";
    case MEMPROF_THREAD_FAILED: return "failed";
    default: return "?";
    }
}

static bool read_flag(struct core_image *c, uint64_t addr, const char *what)
{
    unsigned char flag = 0;
    return core_read(c, addr, &flag, 1, what) && flag;
}

bool core_threads_report(struct core_image *c, FILE *out)
{
    struct registry r;
    struct core_heap_thread *heap = NULL;
    size_t heap_count = 0;
    uint64_t live_blocks;
    bool ok = read_registry(c, &r) && core_heap_threads(c, &heap, &heap_count, &live_blocks);
    if (ok) {
        fputs(read_flag(c, c->tables.threads_running, "the threads' flag") ? "# memprof threads: following creation and exit\n"
                                                                         : "# memprof threads: not following new threads\n",
              out);
        fputs("  Num      Tid  State       Stack    Allocs       Bytes  Created at  \"Name\"\n", out);
    }
    for (uint32_t n = 0; ok && n < r.count; n++) {
        struct memprof_thread *t = &r.records[n];
        if (t->state == MEMPROF_THREAD_UNUSED)
            continue;
        t->site[sizeof t->site - 1] = t->name[sizeof t->name - 1] = '\0';
        /* An exited thread's counts are its record's; a live one's its heap thread's. */
        uint64_t count = t->allocations, bytes = t->allocated_bytes;
        bool counted = t->state == MEMPROF_THREAD_EXITED && (count || bytes);
        for (size_t k = 0; t->state != MEMPROF_THREAD_EXITED && t->tid > 0 && k < heap_count && !counted; k++)
            if (heap[k].tid == t->tid && !heap[k].exited)
                count = heap[k].count, bytes = heap[k].bytes, counted = true;
        fprintf(out, "%5u %8d  %-9s", t->number, t->tid > 0 ? t->tid : 0, state_name(c, t));
        if (t->stack_size)
            fprintf(out, "%8" PRIu64 " KiB", t->stack_size / 1024);
        else
            fputs("       ? KiB", out);
        if (counted)
            fprintf(out, "%10" PRIu64 "%12" PRIu64, count, bytes);
        else
            fputs("         -           -", out);
        fprintf(out, "  %s", t->site[0] ? t->site : "?");
        if (t->name[0])
            fprintf(out, "  \"%s\"", t->name);
        fputc('\n', out);
    }
    free(r.records);
    free(heap);
    return ok;
}

bool core_status(struct core_image *c, FILE *out)
{
    const struct memprof_tables *t = &c->tables;
    struct registry r;
    struct core_heap_thread *heap = NULL;
    size_t heap_count = 0;
    uint64_t objects = 0, live_blocks = 0, stacks = 0, stack_bytes = 0;
    bool ruby = core_has_ruby(c);
    bool ok = read_registry(c, &r) && core_heap_threads(c, &heap, &heap_count, &live_blocks) &&
              (!ruby || core_read_u64(c, t->ruby_tracer + t->ruby_objects + t->map_count, &objects, "the Ruby tracer"));
    for (uint32_t n = 0; ok && n < r.count; n++) {
        const struct memprof_thread *th = &r.records[n];
        if (th->stack_size && th->state == MEMPROF_THREAD_RUNNING && (th->creator_tid || core_has_thread(c, th->tid)))
            stacks++, stack_bytes += th->stack_size;
    }
    if (ok) {
        fprintf(out, "memprof runtime, in the core of pid %ld\n", c->notes.pid);
        fprintf(out, "  ruby:    %s, %" PRIu64 " objects tracked\n",
                !ruby ? "no Ruby VM" : read_flag(c, t->ruby_running, "the Ruby tracer's flag") ? "recording" : "stopped",
                objects);
        fprintf(out, "  heap:    %s, %" PRIu64 " live blocks tracked\n",
                read_flag(c, t->heap_running, "the heap tracer's flag") ? "recording" : "stopped", live_blocks);
        fprintf(out, "  threads: %s, %u seen, %" PRIu64 " live stacks of %" PRIu64 " KiB\n",
                read_flag(c, t->threads_running, "the threads' flag") ? "following" : "not following", r.count, stacks,
                stack_bytes / 1024);
        fprintf(out, "  core:    %zu threads; hooks and memory use are not read from a core\n", c->notes.tid_count);
    }
    free(r.records);
    free(heap);
    return ok;
}
