/* heap_custom.h where memprof cannot patch code (a build for aarch64: the
 * emitter, the patchers and Zydis read and write x86-64 only): every request
 * is refused, in one line that says why. */
#include "heap_custom.h"
#include "../../arch/cpu.h"
#include <stdio.h>

enum memprof_status heap_custom_hook(const char *spec, char *message, size_t message_size)
{
    (void)spec;
    snprintf(message, message_size,
             "memprof: custom allocator hooks patch x86-64 code; this runtime is built for %s", CPU_NAME);
    return MEMPROF_HOOK_FAILED;
}

enum memprof_status heap_custom_unhook_all(char *message, size_t message_size)
{
    snprintf(message, message_size, "memprof: 0 hooks removed: the code patched is as it was");
    return MEMPROF_OK;
}

int heap_custom_describe(struct out *o)
{
    (void)o;
    return 0;
}

void heap_custom_warnings(struct out *o)
{
    (void)o;
}
