/* Arrays written by one thread and read by a report in another, with no lock
 * between them. The owner grows an array by copying it and publishing the
 * copy; a report announces itself before it loads any array pointer. An old
 * copy is unmapped only when no report is reading (it may hold the old
 * pointer); otherwise it is kept until the owner's next growth finds none.
 *
 * Why it is safe: the owner publishes the copy and then reads the count of
 * reports; a report counts itself and then loads the pointer, both
 * sequentially consistent. If the owner sees no report, any report that
 * starts later loads the copy. */
#ifndef MEMPROF_STORE_READERS_H
#define MEMPROF_STORE_READERS_H
#include <stdbool.h>
#include <stddef.h>

#define RETIRED_MAX 8

/* An owner's old copies still waiting for the reports to end. */
struct retired {
    void *pages[RETIRED_MAX];
    size_t bytes[RETIRED_MAX];
    unsigned count;
};

void readers_enter(void);
void readers_leave(void);
/* No report is reading: what an owner retired is free to go (checked after
 * the replacement was published). */
bool readers_none(void);
/* After publishing the replacement of `old` (bytes long): unmap it, now or
 * at a later growth. With more than RETIRED_MAX waiting, it stays mapped. */
void readers_retire(struct retired *r, void *old, size_t bytes);
/* In the child of a fork: the reports of other threads are gone. */
void readers_after_fork(void);
#endif
