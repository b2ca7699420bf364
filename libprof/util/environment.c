#include "environment.h"
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

#define STORE_BYTES (32 << 10)
#define ENTRIES_MAX 256

extern char **environ;

static struct {
    bool captured;
    size_t count, used;
    const char *entries[ENTRIES_MAX];   /* "NAME=VALUE" in store */
    char store[STORE_BYTES];
} env;

static bool wanted(const char *entry)
{
    return strncmp(entry, "MEMPROF_", 8) == 0 || strncmp(entry, "TMPDIR=", 7) == 0;
}

void environment_capture(void)
{
    env.count = env.used = 0;
    for (char **e = environ; e && *e && env.count < ENTRIES_MAX; e++) {
        size_t n = strlen(*e) + 1;
        if (!wanted(*e) || !strchr(*e, '=') || n > STORE_BYTES - env.used)
            continue;
        memcpy(env.store + env.used, *e, n);
        env.entries[env.count++] = env.store + env.used;
        env.used += n;
    }
    env.captured = true;
}

const char *env_get(const char *name)
{
    if (!env.captured)
        environment_capture();
    size_t n = strlen(name);
    for (size_t i = 0; i < env.count; i++)
        if (strncmp(env.entries[i], name, n) == 0 && env.entries[i][n] == '=')
            return env.entries[i] + n + 1;
    return NULL;
}

bool env_says_no(const char *name)
{
    const char *v = env_get(name);
    return v && (strcmp(v, "0") == 0 || strcmp(v, "no") == 0 || strcmp(v, "false") == 0);
}

bool env_says_yes(const char *name)
{
    const char *v = env_get(name);
    return v && *v && !env_says_no(name);
}

int env_set_for_children(const char *name, const char *value)
{
    /* The next setenv after ours in the search order: libc's, even where
     * the program (bash) defines one. */
    int (*libc_setenv)(const char *, const char *, int) =
        (int (*)(const char *, const char *, int))dlsym(RTLD_NEXT, "setenv");
    if (!libc_setenv)
        return ENOSYS;
    return libc_setenv(name, value, 1) == 0 ? 0 : errno;
}
