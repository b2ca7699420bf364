/* Signals that interrupt memprof's own code. A handler the program installed
 * runs behind one trampoline: when the signal came while the thread was in
 * memprof's code, the handler runs with the reentry flag set, so that the
 * hooks it calls record nothing while the hook it interrupted is half done.
 * The heap hooks' short paths then set no flag of their own: two stores
 * fewer in each malloc and free (the flag was an eighth of their cost).
 *
 * While installed, every handler set through sigaction, signal,
 * sysv_signal, bsd_signal or sigset, and every one set before, is behind the
 * trampoline; sigaction and signal still answer with the program's own. */
#ifndef MEMPROF_HOOK_SIGNAL_GUARD_H
#define MEMPROF_HOOK_SIGNAL_GUARD_H

/* 0, or -1 with got_error() set. */
int signal_guard_install(void);
/* The program's handlers given back to the kernel, the hooks removed. */
void signal_guard_remove(void);
#endif
