/* util/maps.c's reading of /proc/self/maps, against stdio's reading of the
 * same file (getline, sscanf): every mapping of a file is found with its
 * protection, with a map of several reads' length (300 pages of alternating
 * protection, each found exactly) and with lines longer than maps.c's
 * buffer (a file whose path is near PATH_MAX, mapped twice), which are read
 * by their head. Anonymous mappings are left out of the comparison: the
 * readers' own buffers come and go between the two reads. */
#include "util/maps.h"
#include "../tap.h"
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Each file's mapping stdio reads is inside a range of `m` with its
 * protection: how many were, and how many were read in all. */
static void files_found(const struct maps *m, size_t *found, size_t *all)
{
    *found = *all = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    char *line = NULL;
    size_t cap = 0;
    while (f && getline(&line, &cap, f) > 0) {
        unsigned long start, end;
        char perms[5];
        int path_at = 0;
        if (sscanf(line, "%lx-%lx %4s %*s %*s %*s %n", &start, &end, perms, &path_at) != 3 || line[path_at] != '/')
            continue;
        int prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
                   (perms[2] == 'x' ? PROT_EXEC : 0);
        const struct maps_range *r = maps_find(m, start);
        (*all)++;
        *found += r && r->prot == prot && r->start <= start && r->end >= end;
    }
    free(line);
    if (f)
        fclose(f);
}

static void check_files(const char *what)
{
    struct maps m;
    if (maps_load(&m) != 0) {
        ok(0, "%s: maps_load", what);
        return;
    }
    size_t found, all;
    files_found(&m, &found, &all);
    ok(all > 0 && found == all, "%s: stdio's %zu mappings of files found by maps_load with their protection (%zu)",
       what, all, found);
    maps_release(&m);
}

/* maps_readable answers from the range found last without a search:
 * against the truth of three pages (readable, none, readable) asked in an
 * order that leaves each range the hint in turn, and against the search
 * alone for 20,000 random spans over them and the 300 pages. */
static void readable_checks(char *many, size_t page)
{
    char *three = mmap(NULL, 3 * page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ok(three != MAP_FAILED && mprotect(three + page, page, PROT_NONE) == 0, "three pages, the middle one PROT_NONE");
    struct maps m;
    if (three == MAP_FAILED || maps_load(&m) != 0) {
        ok(0, "maps_load");
        return;
    }
    uintptr_t t = (uintptr_t)three;
    static const struct { size_t at, len; bool readable; } asks[] = {
        { 0, 8, true },   /* the first page: now the hint */
        { 16, 64, true },
        { 1, 0, true },
        { 0, 1, true },
        { 0, 0, true },
    };
    bool right = true;
    for (size_t i = 0; i < sizeof asks / sizeof asks[0]; i++)
        right &= maps_readable(&m, t + asks[i].at, asks[i].len) == asks[i].readable;
    /* The hint is the first page's range: a span past its end, the middle
     * page (found, not readable: then the hint), the middle again, the last. */
    right &= !maps_readable(&m, t + page - 4, 8);
    right &= maps_readable(&m, t + page - 8, 8);
    right &= !maps_readable(&m, t + page + 8, 8);
    right &= !maps_readable(&m, t + page + 16, 1);
    right &= maps_readable(&m, t + 2 * page, 8);
    right &= !maps_readable(&m, t + 3 * page - 4, 8) || maps_find(&m, t + 3 * page) != NULL;
    right &= !maps_readable(&m, t + page, 8);
    ok(right, "readable, not readable and past a range's end, each asked with the hint on another range and on its own");

    size_t differ = 0;
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 20000; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        bool in_three = (seed >> 63) != 0;
        uintptr_t base = in_three ? t : (uintptr_t)many;
        size_t span = in_three ? 3 * page : 300 * page;
        uintptr_t addr = base + (size_t)(seed >> 20) % span;
        size_t len = (size_t)(seed >> 8) % (2 * page);
        differ += maps_readable(&m, addr, len) != maps_readable_searched(&m, addr, len);
    }
    ok(differ == 0, "20,000 random spans: the hinted answer is the search's (%zu differ)", differ);
    maps_release(&m);
    munmap(three, 3 * page);
}

int main(void)
{
    check_files("this process");

    /* 300 pages of alternating protection: a map of several 4 KiB reads. */
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *many = mmap(NULL, 300 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ok(many != MAP_FAILED, "300 pages mapped");
    for (size_t i = 0; i < 300; i += 2)
        mprotect(many + i * page, page, PROT_READ);
    struct maps m;
    if (maps_load(&m) == 0) {
        size_t exact = 0;
        for (size_t i = 1; i < 299; i++) {   /* the first and last may merge with a neighbour */
            const struct maps_range *r = maps_find(&m, (uintptr_t)(many + i * page));
            exact += r && r->start == (uintptr_t)(many + i * page) && r->end == r->start + page &&
                     r->prot == (i % 2 ? PROT_READ | PROT_WRITE : PROT_READ);
        }
        ok(exact == 298 && m.count > 300, "each of the 298 inner pages found exactly, %zu ranges in all", m.count);
        maps_release(&m);
    }
    check_files("300 ranges more");
    readable_checks(many, page);

    /* A file whose path is near PATH_MAX, mapped twice: lines longer than
     * maps.c's buffer of 4096 bytes. */
    char dir[64], path[PATH_MAX];
    snprintf(dir, sizeof dir, "/tmp/maps-check.%ld", (long)getpid());
    ok(mkdir(dir, 0700) == 0, "a directory for the long path");
    size_t len = (size_t)snprintf(path, sizeof path, "%s/", dir);
    while (len + 251 + 40 < PATH_MAX) {
        memset(path + len, 'd', 250);
        path[len + 250] = '\0';
        mkdir(path, 0700);
        path[len + 250] = '/';
        len += 251;
    }
    memset(path + len, 'f', 20);
    path[len + 20] = '\0';
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    ok(fd >= 0 && ftruncate(fd, (off_t)(2 * page)) == 0, "a file at a path of %zu bytes", strlen(path));
    char *a = fd >= 0 ? mmap(NULL, 2 * page, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
    char *b = fd >= 0 ? mmap(NULL, page, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) : MAP_FAILED;
    ok(a != MAP_FAILED && b != MAP_FAILED, "mapped twice");
    if (a != MAP_FAILED && b != MAP_FAILED && maps_load(&m) == 0) {
        const struct maps_range *ra = maps_find(&m, (uintptr_t)a), *rb = maps_find(&m, (uintptr_t)b);
        ok(ra && ra->prot == PROT_READ && ra->start <= (uintptr_t)a && ra->end >= (uintptr_t)(a + 2 * page),
           "the long line's mapping found with its protection and bounds");
        ok(rb && rb->prot == (PROT_READ | PROT_EXEC) && rb->start <= (uintptr_t)b && rb->end >= (uintptr_t)(b + page),
           "... and the other long line's");
        maps_release(&m);
    }
    check_files("two lines longer than the buffer");
    if (fd >= 0)
        close(fd);
    unlink(path);
    while (strlen(path) > strlen(dir)) {
        *strrchr(path, '/') = '\0';
        rmdir(path);
    }
    rmdir(dir);
    return tap_done();
}
