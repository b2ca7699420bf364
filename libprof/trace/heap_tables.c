/* The C heap tracer's tables described for a reader that cannot run code in
 * the process (`memprof core`, on a core file): memprof_tables in
 * memprof_debugger.h, filled by the compiler from the structures themselves. */
#include "heap_thread.h"
#include "../memprof_debugger.h"
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
    .young_slots = YOUNG_SLOTS,
    .thread_blocks = offsetof(struct heap_thread, blocks),
    .thread_freed = offsetof(struct heap_thread, freed),
    .thread_origins = offsetof(struct heap_thread, origins),
    .thread_origin_count = offsetof(struct heap_thread, origin_count),
    .table_array = offsetof(struct block_table, array),
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
};
