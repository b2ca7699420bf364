/* What a Linux core file's notes say about its process: NT_PRPSINFO (pid,
 * name, arguments), NT_PRSTATUS (its threads), NT_FILE (the files mapped,
 * and where) and NT_AUXV (where the program was loaded, for a core without
 * NT_FILE: core_loader.h). Read with libelf; every size checked against the
 * note. */
#ifndef MEMPROF_TOOLS_CORE_NOTES_H
#define MEMPROF_TOOLS_CORE_NOTES_H
#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct core_mapping {
    uint64_t start, end, offset;   /* offset in the file, in bytes */
    const char *path;
};

struct core_notes {
    long pid;
    char name[17];                 /* pr_fname */
    char args[81];                 /* pr_psargs */
    struct core_mapping *mappings;
    size_t mapping_count;
    char *paths;                   /* the mappings' names, owned */
    long *tids;                    /* the threads (NT_PRSTATUS) */
    size_t tid_count;
    uint64_t entry, execfn;        /* NT_AUXV's AT_ENTRY and AT_EXECFN, or 0 */
    size_t mapping_cap, paths_len; /* while mappings are added */
};

/* 0; or -1 (damaged notes: `why` says which) or -2 (out of memory). */
int core_notes_read(Elf *core, struct core_notes *out, const char **why);
void core_notes_free(struct core_notes *n);
/* A mapping added to the files (for a process's maps, or a core without
 * NT_FILE); false when out of memory. core_notes_added makes the paths
 * pointers once all are in. */
bool core_notes_add(struct core_notes *n, uint64_t start, uint64_t end, uint64_t offset, const char *path);
void core_notes_added(struct core_notes *n);
#endif
