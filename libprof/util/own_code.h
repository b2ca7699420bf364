/* memprof's own machine code: the executable segment of the object that
 * holds the runtime. A pc there is memprof's (a fault to own up to, a
 * signal that interrupted a hook). */
#ifndef MEMPROF_UTIL_OWN_CODE_H
#define MEMPROF_UTIL_OWN_CODE_H
#include <stdbool.h>
#include <stdint.h>

struct own_code {
    uintptr_t start, end;   /* the segment */
    uintptr_t base;         /* the object's load address (pc - base: its offset in the file) */
};

/* Found once (dl_iterate_phdr); call it before any signal handler reads
 * own_code_holds: that reads what this found, and nothing else. */
const struct own_code *own_code_find(void);

/* Async-signal-safe; false before own_code_find. */
static inline bool own_code_holds(const struct own_code *c, uintptr_t pc)
{
    return pc >= c->start && pc < c->end;
}
#endif
