/* What only a debugger uses (memprof_debugger.h): the text buffer GDB writes
 * into, and attaching to and detaching from a process the runtime was
 * loaded into by dlopen (GDB's memprof-attach, `memprof attach`). The
 * thread registry and its event function live with the thread tracer. */
#include "runtime.h"
#include "../memprof_debugger.h"
#include "../trace/heap/heap.h"
#include "../trace/heap/heap_custom.h"
#include "../trace/ruby/ruby.h"
#include "../trace/threads.h"
#include <unistd.h>

EXPORT char memprof_gdb_text[MEMPROF_GDB_TEXT_SIZE];

EXPORT int memprof_attach(int tracers)
{
    if (tracers < 0 || tracers > (MEMPROF_RUBY | MEMPROF_HEAP))
        return call_done(MEMPROF_BAD_ARGUMENT, NULL);
    bool ruby = ruby_tracer_available();
    if (!tracers)
        tracers = ruby ? MEMPROF_RUBY : MEMPROF_HEAP;
    if ((tracers & MEMPROF_RUBY) && !ruby)
        return call_done(MEMPROF_NOT_RUBY, NULL);
    int status = tracers_start(tracers | MEMPROF_THREADS);
    if (status != MEMPROF_OK)
        return call_done(status, NULL);
    struct out o;
    message_begin(&o);
    out_str(&o, "memprof: attached to pid ");
    out_u64(&o, (uint64_t)getpid());
    out_str(&o, tracers == (MEMPROF_RUBY | MEMPROF_HEAP) ? ": recording Ruby objects and the C heap"
                : tracers == MEMPROF_RUBY                  ? ": recording Ruby objects"
                                                           : ": recording the C heap");
    out_str(&o, ", following threads");
    out_finish(&o);
    return call_done(MEMPROF_OK, NULL);
}

EXPORT int memprof_detach(void)
{
    /* First what may answer busy (a thread stopped inside a hook holds the
     * Ruby tables): then nothing has been undone, and GDB tries again. */
    if (ruby_tracer_available() && ruby_tracer_detach() != MEMPROF_OK)
        return call_done(MEMPROF_BUSY, NULL);
    heap_tracer_stop();
    threads_stop();
    size_t size;
    char *message = message_buffer(&size);
    return call_done(heap_custom_unhook_all(message, size) == MEMPROF_OK ? MEMPROF_OK : MEMPROF_HOOK_FAILED, NULL);
}
