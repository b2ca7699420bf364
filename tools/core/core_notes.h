/* What a Linux core file's notes say about its process: NT_PRPSINFO (pid,
 * name, arguments), NT_PRSTATUS (its threads) and NT_FILE (the files
 * mapped, and where). Read with libelf; every size checked against the
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
};

/* 0; or -1 (damaged notes: `why` says which) or -2 (out of memory). */
int core_notes_read(Elf *core, struct core_notes *out, const char **why);
void core_notes_free(struct core_notes *n);
#endif
