/* The process's own threads as /proc shows them, read without malloc (a
 * report runs with the allocator's lock possibly held). */
#ifndef MEMPROF_UTIL_TASKS_H
#define MEMPROF_UTIL_TASKS_H
#include <stdbool.h>
#include <sys/types.h>

/* The thread's name (at most 15 bytes); "" when it is gone. */
void tasks_name(pid_t tid, char name[16]);
/* `visit` for each thread of the process (getdents64: opendir mallocs);
 * only the calling thread's when /proc cannot be read. */
void tasks_each(void (*visit)(pid_t tid, void *ctx), void *ctx);
/* Whether the calling thread is the process's only one, as /proc shows it
 * (false when /proc cannot be read): no other thread can run code it
 * changes. */
bool tasks_alone(void);
/* Whether thread `tid` of this process has gone: its task no longer exists
 * (tgkill with no signal: ESRCH). */
bool tasks_gone(pid_t tid);
#endif
