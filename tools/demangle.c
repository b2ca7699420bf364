/* C++ names as a developer writes them, with libstdc++'s own demangler (the
 * one the compiler's runtime uses): _Z10keep_nodesi is keep_nodes(int). */
#include "commands.h"
#include <stdlib.h>
#include <string.h>

char *__cxa_demangle(const char *mangled, char *buffer, size_t *length, int *status);

const char *demangle(const char *name)
{
    static char *buffer;
    static size_t length;
    if (!name || strncmp(name, "_Z", 2) != 0)
        return name;
    int status = 0;
    char *out = __cxa_demangle(name, buffer, &length, &status);
    if (status != 0 || !out)
        return name;   /* not a C++ name after all (or out of memory) */
    buffer = out;
    return buffer;
}
