/* The files of a core without NT_FILE, from the dynamic linker's own list
 * (core_image.h), read as GDB's solib-svr4 reads such a core. qemu-user
 * writes its guest's core so (NT_PRSTATUS, NT_PRPSINFO and NT_AUXV only)
 * and leaves code out of it: each file's layout is read on disk, and a file
 * counts only when its .dynamic is, entry by entry, the one in memory where
 * the loader says it is. */
#include "core_image.h"
#include "objfile/sysroot.h"
#include <elf.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_OBJECTS 4096   /* link_maps followed: a loop in a damaged list ends */
#define MAX_DYNAMIC 1024   /* .dynamic entries read */
#define PAGE_MASK_4K (~(uint64_t)4095)

struct disk_file {
    int fd;
    Elf *elf;
    GElf_Ehdr eh;
    uint64_t dynamic, dynamic_offset, dynamic_count;   /* PT_DYNAMIC: its address and offset in the file, entries */
};

static void disk_close(struct disk_file *f)
{
    if (f->elf)
        elf_end(f->elf);
    if (f->fd >= 0)
        close(f->fd);
}

/* The ELF file at `path` on disk, of the core's machine. */
static bool disk_open(struct core_image *c, const char *path, struct disk_file *f)
{
    memset(f, 0, sizeof *f);
    f->fd = core_open_file(path);
    f->elf = f->fd >= 0 ? elf_begin(f->fd, ELF_C_READ_MMAP, NULL) : NULL;
    size_t phnum;
    if (!f->elf || gelf_getclass(f->elf) != ELFCLASS64 || !gelf_getehdr(f->elf, &f->eh) ||
        f->eh.e_machine != c->machine || elf_getphdrnum(f->elf, &phnum) != 0)
        return false;
    for (size_t i = 0; i < phnum; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(f->elf, (int)i, &ph) && ph.p_type == PT_DYNAMIC) {
            f->dynamic = ph.p_vaddr;
            f->dynamic_offset = ph.p_offset;
            f->dynamic_count = ph.p_filesz / sizeof(Elf64_Dyn);
        }
    }
    return true;
}

/* Each PT_LOAD of the file, `bias` from its addresses, as NT_FILE lists a
 * file's mappings; false when out of memory. */
static bool add_loads(struct core_image *c, struct disk_file *f, const char *path, uint64_t bias)
{
    size_t phnum = 0;
    elf_getphdrnum(f->elf, &phnum);
    for (size_t i = 0; i < phnum; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(f->elf, (int)i, &ph) || ph.p_type != PT_LOAD || !ph.p_memsz)
            continue;
        uint64_t start = bias + (ph.p_vaddr & PAGE_MASK_4K);
        uint64_t end = (bias + ph.p_vaddr + ph.p_memsz + 4095) & PAGE_MASK_4K;
        if (!core_notes_add(&c->notes, start, end, ph.p_offset & PAGE_MASK_4K, path))
            return false;
    }
    return true;
}

/* A string of the program's memory, read until its NUL. */
static bool peek_string(struct core_image *c, uint64_t addr, char *out, size_t size)
{
    for (size_t i = 0; i + 1 < size; i++)
        if (!core_peek(c, addr + i, &out[i], 1) || !out[i])
            return i > 0 && !out[i];
    return false;
}

/* Whether the .dynamic the process has at `addr` is the file's, entry by
 * entry (an address either as on disk or moved by `bias`, as the loader
 * leaves it; DT_DEBUG the loader's to fill): proof that the file on disk is
 * the one loaded there, and that `bias` is right. `r_debug`: DT_DEBUG's
 * value in the process (0: none, a program the loader did not load). */
static bool dynamic_matches(struct core_image *c, struct disk_file *f, uint64_t addr, uint64_t bias,
                            uint64_t *r_debug)
{
    Elf_Data *d = f->dynamic_count ? elf_getdata_rawchunk(f->elf, (int64_t)f->dynamic_offset,
                                                           f->dynamic_count * sizeof(Elf64_Dyn), ELF_T_DYN)
                                   : NULL;
    *r_debug = 0;
    for (size_t i = 0; d && i < f->dynamic_count && i < MAX_DYNAMIC; i++) {
        GElf_Dyn disk;
        Elf64_Dyn mem;
        if (!gelf_getdyn(d, (int)i, &disk) || !core_peek(c, addr + i * sizeof mem, &mem, sizeof mem) ||
            (uint64_t)mem.d_tag != (uint64_t)disk.d_tag)
            return false;
        if (disk.d_tag == DT_NULL)
            return true;
        if (disk.d_tag == DT_DEBUG)
            *r_debug = mem.d_un.d_ptr;
        else if (mem.d_un.d_val != disk.d_un.d_val && mem.d_un.d_val != disk.d_un.d_val + bias)
            return false;
    }
    return d != NULL;
}

/* The program's file as the kernel names a mapped file (links resolved:
 * /usr/bin/python3.11 for /usr/bin/python3), as the runtime's reports name
 * it; under the sysroot, the path there. `path` itself when it cannot be. */
static const char *resolved(const char *path, char *out)
{
    char in_root[PATH_MAX];
    const char *dir = sysroot_dir(), *found = sysroot_path(path, in_root, sizeof in_root);
    size_t len = strlen(dir);
    if (!realpath(found, out))
        return path;
    if (found == path)
        return out;
    /* Resolved within the sysroot: its path there; a link out of it is left as it was. */
    return strncmp(out, dir, len) == 0 && out[len] == '/' ? out + len : path;
}

bool core_loader_files(struct core_image *c, const char *program)
{
    char execfn[PATH_MAX];
    if (!c->notes.entry)
        return core_fail(c, "%s: neither an NT_FILE nor an NT_AUXV note (not a Linux core of a process?)", c->path);
    if (!program && c->notes.execfn && peek_string(c, c->notes.execfn, execfn, sizeof execfn))
        program = execfn;
    if (!program)
        return core_fail(c, "%s: no NT_FILE note, and the program's name is not in it: name the program "
                            "(memprof core CORE PROGRAM)", c->path);
    struct disk_file f;
    if (!disk_open(c, program, &f)) {
        disk_close(&f);
        return core_fail(c, "%s: no NT_FILE note, and its program %s cannot be read as the core's machine's "
                            "(memprof core CORE PROGRAM; --sysroot DIR for another machine's files)", c->path, program);
    }
    uint64_t bias = c->notes.entry - f.eh.e_entry, r_debug;
    bool ok = dynamic_matches(c, &f, bias + f.dynamic, bias, &r_debug) ||
              core_fail(c, "%s: no NT_FILE note, and %s is not the program it ran (its .dynamic differs from "
                           "the process's)", c->path, program);
    char real[PATH_MAX];
    ok = ok && (add_loads(c, &f, resolved(program, real), bias) || core_fail(c, "out of memory"));
    disk_close(&f);
    /* struct r_debug { int r_version; struct link_map *r_map; ... } and
     * struct link_map { l_addr, l_name, l_ld, l_next, ... }: the ABI's. */
    uint64_t map = 0;
    if (ok && r_debug && !core_peek(c, r_debug + 8, &map, sizeof map))
        ok = core_fail(c, "%s: no NT_FILE note, and the dynamic linker's list is not in the core (its memory was "
                          "not dumped)", c->path);
    bool runtime_seen = false;
    for (unsigned n = 0; ok && map && n < MAX_OBJECTS; n++) {
        uint64_t lm[4];
        char name[PATH_MAX];
        if (!core_peek(c, map, lm, sizeof lm)) {
            /* The objects read so far are named; without the runtime, nothing is. */
            if (!runtime_seen)
                ok = core_fail(c, "%s: no NT_FILE note, and the dynamic linker's list is not whole in the core "
                                  "(its memory was not dumped, or is damaged)", c->path);
            break;
        }
        /* The program's own entry has no name; the vDSO's no file. */
        if (peek_string(c, lm[1], name, sizeof name) && name[0] == '/') {
            uint64_t unused;
            bool loaded = disk_open(c, name, &f) && lm[2] == lm[0] + f.dynamic &&
                          dynamic_matches(c, &f, lm[2], lm[0], &unused);
            const char *slash = strrchr(name, '/');
            if (!loaded && strcmp(slash, "/libmemprof.so") == 0)
                ok = core_fail(c, "%s: %s on disk is not the runtime pid %ld loaded (rebuilt since?)", c->path, name,
                               c->notes.pid);
            else if (loaded)
                ok = add_loads(c, &f, name, lm[0]) || core_fail(c, "out of memory");
            runtime_seen = runtime_seen || (loaded && strcmp(slash, "/libmemprof.so") == 0);
            disk_close(&f);
        }
        map = lm[3];
    }
    core_notes_added(&c->notes);
    return ok;
}
