/* The C heap tracer: live malloc blocks by call site, in any ELF program.
 * Hooks take no lock: each thread records its blocks in tables of its own,
 * and a report merges them (heap_thread.h). */
#ifndef MEMPROF_TRACE_HEAP_H
#define MEMPROF_TRACE_HEAP_H
#include "../../memprof.h"
#include "../../util/out.h"
#include "heap_sample.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Record `frames` frames per site (1: the call site only; up to 16), from
 * the next start. More than one needs libunwind (libunwind.so.8). */
bool heap_tracer_set_frames(int frames);
/* Record one allocation per `bytes` allocated on average (heap_sample.h;
 * 0: every one), the generator seeded with `seed` (0: from the clock).
 * Refused once blocks were recorded with another figure. */
bool heap_tracer_set_sample(uint64_t bytes, uint64_t seed);
uint64_t heap_tracer_sample_bytes(void);
bool heap_tracer_has_backtraces(void);
int heap_tracer_frames(void);
/* Functions to look through besides the built-in allocation wrappers
 * (heap_wrappers.h), from the next start: comma-separated names or globs. */
void heap_tracer_set_wrappers(const char *patterns);
/* Find the wrappers again now (the tracer running): false with `message`
 * when a pattern names no function. */
bool heap_tracer_rebuild_wrappers(char *message, size_t size);
/* The first caller outside the allocation wrappers of the code that called
 * the current function at return address `site` (`site` itself when it is
 * not in one, or without libunwind). Callable from a hook. */
uintptr_t heap_caller_outside_wrappers(uintptr_t site);
/* Once after a start: why a wrapper pattern was not used, else NULL. */
const char *heap_tracer_wrapper_problem(void);
enum memprof_status heap_tracer_start(void);
void heap_tracer_stop(void);
/* At exit, after the last report: recording stops, the hooks stay (the
 * process ends: giving every GOT slot back read /proc/self/maps twice and
 * rewrote the slots for nothing), as the Ruby tracer's do. */
void heap_tracer_stop_at_exit(void);
bool heap_tracer_running(void);
/* The live blocks by call site, largest bytes first, the first `top` rows
 * (0: all): one line per site, "count bytes peak total_count total_bytes
 * address object+0xoffset", then its callers ("  from"), its Ruby line
 * ("  ruby"), and with `by_thread` (a row per site and thread) "  thread N".
 * Before them, "# thread N tid live_count live_bytes total_count name" per
 * thread. No malloc, try-lock only; the threads may go on allocating. */
enum memprof_status heap_tracer_report(struct out *o, unsigned long top, bool by_thread);
/* The raw report's last line when the exit handler wrote it: nothing of the
 * process replaces it or follows it (doc/formats.md), so memprof run names
 * it as soon as it is there. */
#define HEAP_RAW_FINAL "# final\n"
/* The same rows in another format: HEAP_FORMAT_PPROF, google-pprof's heap
 * profile (live count and bytes, totals, the stack; then the memory map). */
/* TEXT_ALL: the raw text with the sites whose blocks are all freed too (a
 * count of 0), for their allocation totals (a pprof profile's alloc_*). */
enum heap_format { HEAP_FORMAT_TEXT, HEAP_FORMAT_TEXT_ALL, HEAP_FORMAT_PPROF };
enum memprof_status heap_tracer_report_as(struct out *o, unsigned long top, bool by_thread, enum heap_format format);
/* The same, with the live bytes and blocks the report counted. */
enum memprof_status heap_tracer_report_totals(struct out *o, unsigned long top, bool by_thread,
                                              enum heap_format format, uint64_t *live_bytes, size_t *live_blocks);
/* The live bytes of each call site now as its allocating threads count
 * them (a block freed by another thread still counts until a report), the
 * `k` largest into `top`, largest first; *total the sum over every site.
 * No malloc, no lock: `scratch` (zeroed at first) keeps its pages between
 * calls. Returns how many are in `top`. */
struct heap_site_bytes {
    uintptr_t site;
    uint64_t bytes;
};
struct heap_site_scratch {
    struct heap_site_bytes *map;
    size_t capacity;
};
size_t heap_tracer_site_bytes(struct heap_site_scratch *scratch, struct heap_site_bytes *top, size_t k,
                              uint64_t *total);
/* "ADDRESS OBJECT+0xOFFSET" for a return address, as the raw report writes
 * its sites; `objects` from elf_objects_snapshot. */
struct elf_object;
void heap_write_site(struct out *o, uintptr_t site, const struct elf_object *objects, size_t n);
/* Live blocks held and bytes of the tracer's tables. */
void heap_tracer_usage(unsigned long *blocks, unsigned long *bytes);
/* Allocations whose stack was walked, and those whose stack the memo of
 * the last walk at their entry gave without one (--frames, wrappers). */
void heap_tracer_stacks(uint64_t *walked, uint64_t *remembered);
/* Blocks put straight in the older tables in whole windows (heap_hooks.c: a
 * heap that only grows), all threads. */
uint64_t heap_tracer_grown_direct(void);
void heap_tracer_after_fork(void);
/* A new thread's tables, made now rather than at its first allocation. */
void heap_tracer_thread_begin(void);
/* Blocks and bytes the calling thread allocated, or (heap_thread_totals)
 * the running thread `tid`; false when the tracer has no tables for it. */
bool heap_current_thread_totals(uint64_t *count, uint64_t *bytes);
bool heap_thread_totals(pid_t tid, uint64_t *count, uint64_t *bytes);
/* Who allocated the live block that holds `addr`: its size, site, callers
 * and Ruby line. *found false when no live block holds it. */
/* The bytes and blocks live now, exactly (the report's reading, without its
 * rows): MEMPROF_BUSY when a report or a hook holds the tables. */
enum memprof_status heap_tracer_live(uint64_t *bytes, size_t *blocks);
enum memprof_status heap_tracer_where(struct out *o, uintptr_t addr, bool *found);

/* Blocks of an allocator memprof does not know (trace/heap_custom.c): made
 * at `site` (a return address), and freed. Kept apart from malloc's blocks
 * at the same address (an allocator that carves its blocks out of a malloc
 * block starts one at that block's address). Callable from a hook. */
void heap_note_custom_alloc(void *p, size_t size, void *site);
void heap_note_custom_free(void *p);
#endif
