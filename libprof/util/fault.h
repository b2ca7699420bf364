/* A fault in memprof's own code is never silent: one line on stderr names it
 * (where, and that it is memprof's bug), then the handler that was there
 * runs (Ruby's bug report, a core dump...). A program's own handler may find
 * the process too damaged to say anything, as Ruby's did with a thread whose
 * context was freed: memprof speaks first. */
#ifndef MEMPROF_UTIL_FAULT_H
#define MEMPROF_UTIL_FAULT_H

/* Put the guard in front of the SIGSEGV, SIGBUS, SIGILL and SIGFPE handlers
 * installed now (once each: again after a handler replaced it). In a Ruby
 * process, call it once the VM has installed its own (a Ruby safe point):
 * Ruby keeps the handler it replaced and calls it after its report, with one
 * argument. */
void fault_guard_install(void);
#endif
