/* The tracers' tables described for a reader that cannot run code in
 * the process (`memprof core`, on a core file): memprof_tables in
 * memprof_debugger.h, filled by the compiler from the structures themselves. */
#include "heap/heap_thread.h"
#include "heap/heap_ruby.h"
#include "heap/heap_wrappers.h"
#include "ruby/ruby_state.h"
#include "threads.h"
#include "../memprof_debugger.h"
#include "../util/pages.h"
#include <stddef.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT const struct memprof_tables memprof_tables = {
    .magic = MEMPROF_TABLES_MAGIC,
    .version = MEMPROF_TABLES_VERSION,
    .size = sizeof(struct memprof_tables),
    .heap_running = (uint64_t)(uintptr_t)&heap.running,
    .heap_threads = (uint64_t)(uintptr_t)&heap.threads,
    .thread_size = sizeof(struct heap_thread),
    .thread_next = offsetof(struct heap_thread, next),
    .thread_serial = offsetof(struct heap_thread, serial),
    .thread_tid = offsetof(struct heap_thread, tid),
    .thread_young = offsetof(struct heap_thread, young),
    .young_slots = YOUNG_HELD,
    .thread_blocks = offsetof(struct heap_thread, blocks),
    .thread_freed = offsetof(struct heap_thread, freed),
    .thread_origins = offsetof(struct heap_thread, origins),
    .thread_origin_count = offsetof(struct heap_thread, origin_count),
    .table_array = offsetof(struct block_table, array),
    .table_draining = offsetof(struct block_table, draining),
    .tables_generation = (uint64_t)(uintptr_t)&pages_generation,
    .array_capacity = offsetof(struct block_array, capacity),
    .array_slots = offsetof(struct block_array, slots),
    .slot_size = sizeof(struct block_slot),
    .slot_addr = offsetof(struct block_slot, addr),
    .slot_number = offsetof(struct block_slot, number),
    .slot_word = offsetof(struct block_slot, word),
    .word_size_bits = BLOCK_SIZE_BITS,
    .origin_array_records = offsetof(struct origin_array, records),
    .origin_size = sizeof(struct heap_origin),
    .origin_key = offsetof(struct heap_origin, key),
    .origin_link = offsetof(struct heap_origin, link),
    .origin_total_count = offsetof(struct heap_origin, total_count),
    .origin_total_bytes = offsetof(struct heap_origin, total_bytes),
    .origin_peak_bytes = offsetof(struct heap_origin, peak_bytes),
    .thread_shift = THREAD_SHIFT,

    .ruby_tracer = (uint64_t)(uintptr_t)&ruby_tracer,
    .ruby_tracer_size = sizeof(struct ruby_tracer),
    .ruby_objects = offsetof(struct ruby_tracer, objects),
    .ruby_origins = offsetof(struct ruby_tracer, origins),
    .ruby_sites = offsetof(struct ruby_tracer, sites),
    .ruby_origin_names = offsetof(struct ruby_tracer, origin_names),
    .ruby_origin_names_bytes = offsetof(struct ruby_tracer, origin_names_bytes),
    .ruby_class_names = offsetof(struct ruby_tracer, class_names),
    .ruby_sample = offsetof(struct ruby_tracer, config.sample),
    .ruby_dropped = offsetof(struct ruby_tracer, dropped),
    .ruby_hidden_files = offsetof(struct ruby_tracer, hidden_files),
    .ruby_hidden_len = offsetof(struct ruby_tracer, hidden_len),
    .ruby_epoch_gc = offsetof(struct ruby_tracer, epoch_gc),
    .ruby_epoch_gc_bytes = offsetof(struct ruby_tracer, epoch_gc_bytes),
    .map_page_size = offsetof(struct slot_map, page_size),
    .map_slot_size = offsetof(struct slot_map, slot_size),
    .map_slots_per_page = offsetof(struct slot_map, slots_per_page),
    .map_pages = offsetof(struct slot_map, pages),
    .map_page_mask = offsetof(struct slot_map, page_mask),
    .map_count = offsetof(struct slot_map, count),
    .page_size = sizeof(struct slot_page),
    .page_base = offsetof(struct slot_page, base),
    .page_records = offsetof(struct slot_page, records),
    .record_size = sizeof(struct slot_record),
    .record_origin = offsetof(struct slot_record, origin_plus_one),
    .record_aux = offsetof(struct slot_record, aux),
    .aux_type_mask = RUBY_T_MASK,
    .aux_epoch_shift = 8,
    .intern_tuples = offsetof(struct intern_table, tuples),
    .intern_count = offsetof(struct intern_table, count),
    .tuple_size = sizeof(struct intern_tuple),
    .tuple_a = offsetof(struct intern_tuple, a),
    .tuple_b = offsetof(struct intern_tuple, b),
    .sites_files = offsetof(struct site_table, files),
    .sites_frames = offsetof(struct site_table, frames),
    .pool_chars = offsetof(struct string_pool, chars),
    .pool_len = offsetof(struct string_pool, len),

    .heap_frames = (uint64_t)(uintptr_t)&heap.frames,
    .heap_ruby_lines = (uint64_t)(uintptr_t)&heap_ruby_lines,
    .sites_size = sizeof(struct site_table),
    .heap_wrappers = (uint64_t)(uintptr_t)&heap_wrappers_published,
    .wrappers_count = offsetof(struct heap_wrapper_table, count),
    .wrappers_ranges = offsetof(struct heap_wrapper_table, ranges),
    .range_size = sizeof(struct heap_wrapper_range),
    .range_start = offsetof(struct heap_wrapper_range, start),
    .range_end = offsetof(struct heap_wrapper_range, end),
    .wrappers_max = HEAP_WRAPPER_RANGES,
    .thread_name = offsetof(struct heap_thread, name),
    .thread_name_size = sizeof ((struct heap_thread *)0)->name,
    .thread_exited = offsetof(struct heap_thread, exited),
    .ruby_running = (uint64_t)(uintptr_t)&ruby_recording,
    .threads_running = (uint64_t)(uintptr_t)&threads_following,
    .thread_registry = (uint64_t)(uintptr_t)&memprof_thread_registry,
    .heap_sample_bytes = (uint64_t)(uintptr_t)&heap.sample_bytes,
};
_Static_assert(sizeof heap.frames == 4, "heap_frames is an int");
_Static_assert(RUBY_AUX(0, 1) == 1u << 8, "aux_epoch_shift");
_Static_assert(sizeof ruby_tracer.config.sample == 4 && sizeof ruby_tracer.dropped == 8, "the sizes doc/tables.md gives");
