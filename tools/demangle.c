/* C++ names as a developer writes them, with libstdc++'s own demangler (the
 * one the compiler's runtime uses): _Z10keep_nodesi is keep_nodes(int).
 * libstdc++ is loaded on the first C++ name: a C program's report, the
 * common case of `memprof symbolize`, does not pay for loading it. */
#include "commands.h"
#include <dlfcn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef char *cxa_demangle_fn(const char *mangled, char *buffer, size_t *length, int *status);

static cxa_demangle_fn *demangler(void)
{
    static cxa_demangle_fn *fn;
    static bool tried;
    if (!tried) {
        tried = true;
        void *lib = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
        *(void **)&fn = lib ? dlsym(lib, "__cxa_demangle") : NULL;
    }
    return fn;
}

const char *demangle(const char *name)
{
    static char *buffer;
    static size_t length;
    if (!name || strncmp(name, "_Z", 2) != 0 || !demangler())
        return name;   /* without libstdc++, the mangled name */
    int status = 0;
    char *out = demangler()(name, buffer, &length, &status);
    if (status != 0 || !out)
        return name;   /* not a C++ name after all (or out of memory) */
    buffer = out;
    return buffer;
}
