#include "scratch.h"
#include "commands.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int scratch_make(char *dir, size_t size, uid_t owner)
{
    const char *tmpdir = getenv("TMPDIR");
    const char *base = tmpdir && *tmpdir ? tmpdir : "/tmp";
    errno = 0;
    if ((size_t)snprintf(dir, size, "%s/memprof.XXXXXX", base) >= size || !mkdtemp(dir)) {
        fprintf(stderr, "memprof: cannot create a temporary directory in %s: %s\n", base,
                strerror(errno ? errno : ENAMETOOLONG));
        return EXIT_USAGE;
    }
    if (owner != (uid_t)-1 && owner != geteuid() && chown(dir, owner, (gid_t)-1) != 0) {
        fprintf(stderr, "memprof: cannot give %s to user %ld: %s\n", dir, (long)owner, strerror(errno));
        rmdir(dir);
        return EXIT_USAGE;
    }
    return 0;
}

void scratch_remove(const char *dir)
{
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            unlinkat(dirfd(d), e->d_name, 0);
    if (d)
        closedir(d);
    rmdir(dir);
}
