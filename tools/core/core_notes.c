/* A core file's NT_PRPSINFO, NT_PRSTATUS, NT_FILE and NT_AUXV notes (core_notes.h). */
#include "core_notes.h"
#include <elf.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/procfs.h>

/* NT_FILE: count, page size, count x (start, end, page offset), then the
 * names, each ending with a NUL. */
static int read_files(const char *desc, size_t size, struct core_notes *out, const char **why)
{
    uint64_t count, page;
    memcpy(&count, desc, 8);
    memcpy(&page, desc + 8, 8);
    if (count > size / 24 || 16 + count * 24 > size) {
        *why = "a damaged NT_FILE note";
        return -1;
    }
    size_t names = size - 16 - count * 24;
    out->mappings = calloc(count ? count : 1, sizeof *out->mappings);
    out->paths = malloc(names + 1);
    if (!out->mappings || !out->paths)
        return -2;
    memcpy(out->paths, desc + 16 + count * 24, names);
    out->paths[names] = '\0';
    const char *name = out->paths;
    for (uint64_t k = 0; k < count; k++) {
        uint64_t triple[3];
        memcpy(triple, desc + 16 + k * 24, 24);
        if (name >= out->paths + names) {
            *why = "a damaged NT_FILE note";
            return -1;
        }
        out->mappings[k] = (struct core_mapping){ triple[0], triple[1], triple[2] * page, name };
        name += strlen(name) + 1;
    }
    out->mapping_count = count;
    return 0;
}

int core_notes_read(Elf *core, struct core_notes *out, const char **why)
{
    memset(out, 0, sizeof *out);
    size_t phnum;
    if (elf_getphdrnum(core, &phnum) != 0) {
        *why = "no program headers";
        return -1;
    }
    for (size_t i = 0; i < phnum; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(core, (int)i, &ph) || ph.p_type != PT_NOTE)
            continue;
        Elf_Data *d = elf_getdata_rawchunk(core, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_NHDR);
        if (!d) {
            *why = "truncated: its notes are not in the file";
            return -1;
        }
        GElf_Nhdr nh;
        size_t off = 0, name_off, desc_off;
        while ((off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
            const char *desc = (const char *)d->d_buf + desc_off;
            if (nh.n_type == NT_PRPSINFO && nh.n_descsz >= sizeof(struct elf_prpsinfo)) {
                const struct elf_prpsinfo *ps = (const struct elf_prpsinfo *)desc;
                out->pid = ps->pr_pid;
                snprintf(out->name, sizeof out->name, "%.*s", (int)sizeof ps->pr_fname, ps->pr_fname);
                snprintf(out->args, sizeof out->args, "%.*s", (int)sizeof ps->pr_psargs, ps->pr_psargs);
            } else if (nh.n_type == NT_PRSTATUS && nh.n_descsz >= sizeof(struct elf_prstatus)) {
                /* One per thread: its tid. */
                long *grown = realloc(out->tids, (out->tid_count + 1) * sizeof *grown);
                if (!grown)
                    return -2;
                out->tids = grown;
                out->tids[out->tid_count++] = ((const struct elf_prstatus *)desc)->pr_pid;
            } else if (nh.n_type == NT_AUXV) {
                /* (type, value) pairs up to AT_NULL. */
                for (size_t k = 0; k + 16 <= nh.n_descsz; k += 16) {
                    uint64_t pair[2];
                    memcpy(pair, desc + k, sizeof pair);
                    if (pair[0] == AT_NULL)
                        break;
                    if (pair[0] == AT_ENTRY)
                        out->entry = pair[1];
                    else if (pair[0] == AT_EXECFN)
                        out->execfn = pair[1];
                }
            } else if (nh.n_type == NT_FILE && nh.n_descsz >= 16 && !out->mappings) {
                int rc = read_files(desc, nh.n_descsz, out, why);
                if (rc)
                    return rc;
            }
        }
    }
    return 0;
}

bool core_notes_add(struct core_notes *n, uint64_t start, uint64_t end, uint64_t offset, const char *path)
{
    size_t len = strlen(path) + 1;
    char *paths = realloc(n->paths, n->paths_len + len);
    if (paths)
        n->paths = paths;
    struct core_mapping *more = n->mapping_count < n->mapping_cap
                                    ? n->mappings
                                    : realloc(n->mappings, (n->mapping_cap = n->mapping_cap * 2 + 64) * sizeof *more);
    if (more)
        n->mappings = more;
    if (!paths || !more)
        return false;
    memcpy(n->paths + n->paths_len, path, len);
    /* The path's offset for now: the pool may move as it grows. */
    n->mappings[n->mapping_count++] = (struct core_mapping){ start, end, offset, (const char *)(uintptr_t)n->paths_len };
    n->paths_len += len;
    return true;
}

void core_notes_added(struct core_notes *n)
{
    for (size_t i = 0; i < n->mapping_count; i++)
        n->mappings[i].path = n->paths + (uintptr_t)n->mappings[i].path;
}

void core_notes_free(struct core_notes *n)
{
    free(n->mappings);
    free(n->paths);
    free(n->tids);
    memset(n, 0, sizeof *n);
}
