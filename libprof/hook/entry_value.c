/* A parameter known as a register's value at its function's entry (see
 * entry_value.h). The frames of one thread nest: a frame's CFA is above
 * those of every frame it called, so a value kept for a CFA at or below a
 * new frame's belongs to a frame that has returned. */
#include "entry_value.h"
#include <stdatomic.h>

#define KEPT_MAX 64

struct kept_value {
    uint64_t key, cfa, value;
};

static __thread struct kept_value kept[KEPT_MAX] __attribute__((tls_model("initial-exec")));
static __thread unsigned kept_count __attribute__((tls_model("initial-exec")));
static _Atomic uint64_t missed;

void entry_value_keep(uint64_t key, uint64_t value, uint64_t cfa)
{
    while (kept_count && kept[kept_count - 1].cfa <= cfa)
        kept_count--;   /* frames that returned (or this one, entered again) */
    if (kept_count == KEPT_MAX) {
        /* Deeper than the stack holds: the outermost frame's value goes. */
        for (unsigned i = 1; i < KEPT_MAX; i++)
            kept[i - 1] = kept[i];
        kept_count--;
    }
    /* The entry written before it counts: a signal handler running the
     * same function in between keeps its own above it. */
    kept[kept_count] = (struct kept_value){ key, cfa, value };
    atomic_signal_fence(memory_order_seq_cst);
    kept_count++;
}

void entry_value_recall(uint32_t id, uint64_t cfa, uint64_t second, uintptr_t caller, entry_handler_fn *handler,
                        uint64_t key)
{
    while (kept_count && kept[kept_count - 1].cfa < cfa)
        kept_count--;   /* frames below this one, returned */
    if (kept_count && kept[kept_count - 1].cfa == cfa && kept[kept_count - 1].key == key)
        handler(id, kept[kept_count - 1].value, second, caller);
    else
        atomic_fetch_add_explicit(&missed, 1, memory_order_relaxed);
}

uint64_t entry_value_missed(void)
{
    return atomic_load_explicit(&missed, memory_order_relaxed);
}
