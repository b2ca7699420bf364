/* The one channel for what a call has to say: its status, and one text. */
#include "runtime.h"
#include "../trace/ruby/ruby.h"
#include "../util/own_files.h"
#include <limits.h>
#include <stdarg.h>
#include <unistd.h>

static int last_status;
static const char *last_text = "";
/* Big enough for an allocation's stack (memprof_where) and a path. */
static char message[8192];
static bool message_written;

void message_begin(struct out *o)
{
    out_init_fd(o, -1, message, sizeof message);
    message_written = true;
}

char *message_buffer(size_t *size)
{
    message[0] = '\0';
    message_written = true;
    *size = sizeof message;
    return message;
}

int call_done(int status, const char *text)
{
    last_status = status;
    last_text = text ? text : message_written ? message : status_line(status);
    message_written = false;
    return status;
}

const char *status_line(int status)
{
    switch (status) {
    case MEMPROF_OK:
        return ruby_tracer_running() ? "memprof: recording" : "memprof: stopped";
    case MEMPROF_NOT_RUBY:
        return "memprof: no Ruby VM in this process: nothing to trace";
    case MEMPROF_BUSY:
        return "memprof: busy: a thread is inside a memprof hook; continue a moment (e.g. 'finish') and retry";
    case MEMPROF_IN_GC:
        return "memprof: the Ruby GC is running; continue a moment (e.g. 'finish') and retry";
    case MEMPROF_HOOK_FAILED:
        return "memprof: could not hook the allocators (see the process's stderr)";
    case MEMPROF_NO_MEMORY:
        return "memprof: out of memory";
    case MEMPROF_IO_ERROR:
        return "memprof: cannot write the report";
    case MEMPROF_BAD_ARGUMENT:
        return "memprof: bad argument: site is nearest (0) or user (1), frames 1-64, sample 1 or more";
    default:
        return "memprof: unknown status";
    }
}

EXPORT const char *memprof_text(void)
{
    return last_text;
}

EXPORT int memprof_last_status(void)
{
    return last_status;
}

void say(const char *part, ...)
{
    struct out o;
    char buf[PATH_MAX + 256];
    int fd = own_files_stderr_open();
    out_init_fd(&o, fd, buf, sizeof buf);
    va_list ap;
    va_start(ap, part);
    for (; part; part = va_arg(ap, const char *))
        out_str(&o, part);
    va_end(ap);
    out_char(&o, '\n');
    out_finish(&o);
    own_files_stderr_close(fd);
}
