#include "sysroot.h"
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char root[PATH_MAX];
static bool chosen;

void sysroot_set(const char *dir)
{
    snprintf(root, sizeof root, "%s", dir ? dir : "");
    chosen = true;
}

const char *sysroot_dir(void)
{
    if (!chosen)
        sysroot_set(getenv("MEMPROF_SYSROOT"));
    return root;
}

const char *sysroot_path(const char *path, char *buf, size_t size)
{
    const char *dir = sysroot_dir();
    if (!*dir || *path != '/')
        return path;
    int n = snprintf(buf, size, "%s%s", dir, path);
    return n > 0 && (size_t)n < size && access(buf, R_OK) == 0 ? buf : path;
}
