/* A core file read as the process's memory and files (core_image.h). */
#include "core_image.h"
#include "objfile/sysroot.h"
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int core_open_file(const char *path)
{
    char buf[PATH_MAX];
    return open(sysroot_path(path, buf, sizeof buf), O_RDONLY | O_CLOEXEC);
}

bool core_fail(struct core_image *c, const char *fmt, ...)
{
    if (!c->why[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->why, sizeof c->why, fmt, ap);
        va_end(ap);
    }
    return false;
}

/* `len` bytes of the process's memory at `addr`, from the core's segments. */
/* 0 read, 1 not in the core's memory, 2 cut off the file. */
static int read_at(struct core_image *c, uint64_t addr, void *out, size_t len)
{
    if (c->pid > 0) {   /* a running process: what is mapped now (it runs on) */
        struct iovec local = { out, len }, remote = { (void *)(uintptr_t)addr, len };
        ssize_t n = len ? process_vm_readv(c->pid, &local, 1, &remote, 1, 0) : 0;
        if (n < 0 && (errno == EPERM || errno == ESRCH) && !c->process_errno)
            c->process_errno = errno;
        return n == (ssize_t)len ? 0 : 1;
    }
    for (size_t i = 0; i < c->segment_count; i++) {
        const struct core_segment *s = &c->segments[i];
        if (addr < s->vaddr || addr - s->vaddr >= s->filesz)
            continue;
        if (len > s->filesz - (addr - s->vaddr))
            return 1;
        return pread(c->fd, out, len, (off_t)(s->offset + (addr - s->vaddr))) == (ssize_t)len ? 0 : 2;
    }
    return 1;
}

bool core_read(struct core_image *c, uint64_t addr, void *out, size_t len, const char *what)
{
    int rc = read_at(c, addr, out, len);
    if (rc == 2)
        return core_fail(c, "%s: truncated: %s at 0x%" PRIx64 " is not in the file", c->path, what, addr);
    if (rc == 1 && c->pid > 0)
        return c->process_errno ? core_fail(c, "cannot read the memory of %s: %s", c->path, strerror(c->process_errno))
                                : core_fail(c, "%s: %s at 0x%" PRIx64 " is not mapped (it changed while read)",
                                            c->path, what, addr);
    if (rc == 1)
        return core_fail(c, "%s: %s at 0x%" PRIx64 " is not in the core (a damaged table, or memory not dumped)",
                         c->path, what, addr);
    return true;
}

bool core_peek(struct core_image *c, uint64_t addr, void *out, size_t len)
{
    return read_at(c, addr, out, len) == 0;
}

bool core_peek_pieces(struct core_image *c, const struct core_piece *pieces, size_t count)
{
    enum { MOST = 8 };
    if (c->pid <= 0 || count > MOST) {
        for (size_t i = 0; i < count; i++)
            if (!core_peek(c, pieces[i].addr, pieces[i].out, pieces[i].len))
                return false;
        return true;
    }
    struct iovec local[MOST], remote[MOST];
    size_t total = 0;
    for (size_t i = 0; i < count; i++) {
        local[i] = (struct iovec){ pieces[i].out, pieces[i].len };
        remote[i] = (struct iovec){ (void *)(uintptr_t)pieces[i].addr, pieces[i].len };
        total += pieces[i].len;
    }
    ssize_t n = process_vm_readv(c->pid, local, count, remote, count, 0);
    if (n < 0 && (errno == EPERM || errno == ESRCH) && !c->process_errno)
        c->process_errno = errno;
    return n == (ssize_t)total;
}

bool core_read_u64(struct core_image *c, uint64_t addr, uint64_t *v, const char *what)
{
    return core_read(c, addr, v, 8, what);
}

static bool read_notes(struct core_image *c, const char *program)
{
    const char *why = NULL;
    int rc = core_notes_read(c->elf, &c->notes, &why);
    if (rc == -2)
        return core_fail(c, "out of memory");
    if (rc)
        return core_fail(c, "%s: %s", c->path, why);
    return c->notes.mappings || core_loader_files(c, program);
}

static bool open_file(struct core_image *c, const char *path, const char *program)
{
    c->path = path;
    c->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (c->fd < 0)
        return core_fail(c, "cannot open %s: %s", path, strerror(errno));
    elf_version(EV_CURRENT);
    c->elf = elf_begin(c->fd, ELF_C_READ_MMAP, NULL);
    GElf_Ehdr eh;
    if (!c->elf || elf_kind(c->elf) != ELF_K_ELF || !gelf_getehdr(c->elf, &eh) || eh.e_type != ET_CORE)
        return core_fail(c, "%s is not an ELF core file", path);
    if (eh.e_machine != EM_X86_64 && eh.e_machine != EM_AARCH64)
        return core_fail(c, "%s is a core of another machine than x86-64 or AArch64", path);
    c->machine = eh.e_machine;
    size_t phnum;
    if (elf_getphdrnum(c->elf, &phnum) != 0 || !(c->segments = calloc(phnum + 1, sizeof *c->segments)) ||
        !(c->regions = calloc(phnum + 1, sizeof *c->regions)))
        return core_fail(c, "%s: no program headers", path);
    off_t size = lseek(c->fd, 0, SEEK_END);
    for (size_t i = 0; i < phnum; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(c->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
            continue;
        c->regions[c->region_count++] = (struct core_region){ ph.p_vaddr, ph.p_memsz, ph.p_flags };
        if (!ph.p_filesz)
            continue;
        if ((uint64_t)size < ph.p_offset)
            continue;   /* cut off: read_memory says so when it is needed */
        uint64_t present = (uint64_t)size - ph.p_offset < ph.p_filesz ? (uint64_t)size - ph.p_offset : ph.p_filesz;
        c->segments[c->segment_count++] = (struct core_segment){ ph.p_vaddr, present, ph.p_offset };
    }
    return read_notes(c, program);
}

/* The load bias of the file mapped at `m` (its first PT_LOAD, on disk). */
/* The path the dynamic linker knew a library by: its DT_SONAME beside the
 * file NT_FILE names, when that is the same file (libruby-3.1.so.3.1, a
 * link to libruby-3.1.so.3.1.7), as the runtime's reports name it. NULL
 * when there is none. */
static char *loader_path(Elf *e, const char *path)
{
    char *found = NULL;
    for (Elf_Scn *scn = NULL; !found && (scn = elf_nextscn(e, scn));) {
        GElf_Shdr sh;
        Elf_Data *d;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
            continue;
        for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
            GElf_Dyn dyn;
            const char *soname = gelf_getdyn(d, (int)i, &dyn) && dyn.d_tag == DT_SONAME
                                     ? elf_strptr(e, sh.sh_link, dyn.d_un.d_val) : NULL;
            const char *slash = strrchr(path, '/');
            if (!soname || strchr(soname, '/') || !slash || strcmp(slash + 1, soname) == 0)
                continue;
            struct stat a, b;
            char in_root[2][PATH_MAX];
            if (asprintf(&found, "%.*s/%s", (int)(slash - path), path, soname) < 0) {
                found = NULL;
            } else if (stat(sysroot_path(found, in_root[0], sizeof in_root[0]), &a) != 0 ||
                       stat(sysroot_path(path, in_root[1], sizeof in_root[1]), &b) != 0 || a.st_dev != b.st_dev ||
                       a.st_ino != b.st_ino) {
                free(found);
                found = NULL;
            }
            break;
        }
    }
    return found;
}

/* The load bias of the file mapped at `first` (its first PT_LOAD, on disk),
 * and the name the dynamic linker knew it by (NULL: its own). */
static bool load_bias(struct core_image *c, const struct core_mapping *first, uint64_t *bias, char **name)
{
    int fd = core_open_file(first->path);
    Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
    size_t phnum = 0;
    bool found = false;
    if (e && elf_getphdrnum(e, &phnum) == 0) {
        for (size_t i = 0; i < phnum && !found; i++) {
            GElf_Phdr ph;
            if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD) {
                *bias = first->start - (ph.p_vaddr & ~(uint64_t)4095);
                found = true;
            }
        }
    }
    if (found && name)
        *name = loader_path(e, first->path);
    if (e)
        elf_end(e);
    if (fd >= 0)
        close(fd);
    return found || core_fail(c, "cannot read %s, mapped in %s, on disk", first->path,
                              c->pid ? c->path : "the core");
}

/* The address of memprof_tables in the process: the runtime among the
 * mapped files, and the symbol in its .dynsym on disk. */
static bool find_tables(struct core_image *c, uint64_t *addr)
{
    const struct core_mapping *runtime = NULL;
    for (size_t i = 0; i < c->notes.mapping_count && !runtime; i++) {
        const char *slash = strrchr(c->notes.mappings[i].path, '/');
        if (slash && strcmp(slash, "/libmemprof.so") == 0 && c->notes.mappings[i].offset == 0)
            runtime = &c->notes.mappings[i];
    }
    if (!runtime)
        return core_fail(c, "%s: the memprof runtime was not loaded in pid %ld (no libmemprof.so among its files)", c->path,
                    c->notes.pid);
    uint64_t bias;
    if (!load_bias(c, runtime, &bias, NULL))
        return false;
    int fd = core_open_file(runtime->path);
    Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
    bool found = false;
    for (Elf_Scn *scn = NULL; e && !found && (scn = elf_nextscn(e, scn));) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
            GElf_Sym sym;
            const char *name = gelf_getsym(d, (int)i, &sym) ? elf_strptr(e, sh.sh_link, sym.st_name) : NULL;
            if (name && strcmp(name, "memprof_tables") == 0 && sym.st_shndx != SHN_UNDEF) {
                *addr = bias + sym.st_value;
                found = true;
                break;
            }
        }
    }
    if (e)
        elf_end(e);
    if (fd >= 0)
        close(fd);
    return found || core_fail(c, "%s: %s has no memprof_tables (a memprof older than the core reader?)", c->path,
                         runtime->path);
}

/* The descriptor, checked: this reader's version, sizes that hold what they
 * say, offsets inside their structures. */
static bool read_descriptor(struct core_image *c, uint64_t addr, struct memprof_tables *t)
{
    memset(t, 0, sizeof *t);
    if (!core_read(c, addr, t, offsetof(struct memprof_tables, heap_running), "the tables' descriptor"))
        return false;
    if (memcmp(t->magic, MEMPROF_TABLES_MAGIC, sizeof t->magic) != 0)
        return core_fail(c, "%s: no tables' descriptor where the runtime on disk puts it (no magic): the core is "
                            "damaged, or the runtime was rebuilt after the process started",
                         c->path);
    if (t->version != MEMPROF_TABLES_VERSION)
        return core_fail(c, "%s: the tables' layout is version %u; this memprof reads version %u", c->path, t->version,
                    MEMPROF_TABLES_VERSION);
    if (t->size != sizeof *t)
        return core_fail(c, "%s: the tables' descriptor is %u bytes, not %zu: damaged", c->path, t->size, sizeof *t);
    if (!core_read(c, addr, t, sizeof *t, "the tables' descriptor"))
        return false;
    bool ok = t->thread_size >= 64 && t->thread_size < (1u << 20) && t->young_slots && t->young_slots <= 65536 &&
              t->thread_next + 8 <= t->thread_size && t->thread_serial + 4 <= t->thread_size &&
              t->thread_tid + 4 <= t->thread_size &&
              t->thread_young + (uint64_t)t->young_slots * t->slot_size <= t->thread_size &&
              t->young_direct < t->young_slots && t->young_slots - t->young_direct <= 256 &&
              t->thread_leaving_next + 4 <= t->thread_size &&
              t->thread_blocks + t->table_directory + 8 <= t->thread_size &&
              t->thread_freed + t->table_directory + 8 <= t->thread_size &&
              t->thread_spill + t->table_directory + 8 <= t->thread_size && t->thread_origins + 8 <= t->thread_size &&
              t->thread_origin_count + 8 <= t->thread_size && t->array_capacity + 8 <= t->array_slots &&
              t->slot_size >= 24 && t->slot_size <= 64 && t->slot_addr + 8 <= t->slot_size &&
              t->slot_number + 8 <= t->slot_size && t->slot_word + 8 <= t->slot_size && t->word_size_bits >= 32 &&
              t->word_size_bits < 64 && t->origin_size >= 8 && t->origin_size <= 256 &&
              t->origin_key + 8 <= t->origin_size && t->origin_link + 8 <= t->origin_size &&
              t->origin_total_count + 8 <= t->origin_size && t->origin_total_bytes + 8 <= t->origin_size &&
              t->origin_peak_bytes + 8 <= t->origin_size && t->origin_array_records >= 8 &&
              t->origin_array_records <= 64 && t->thread_shift > 32 && t->thread_shift < 64 &&
              t->directory_capacity + 8 <= t->directory_regions && t->region_size >= 16 && t->region_size <= 64 &&
              t->region_key + 8 <= t->region_size && t->region_array + 8 <= t->region_size &&
              t->region_shift >= 12 && t->region_shift < 48 && t->array_number_base + 8 <= t->array_slots &&
              t->packed_slot_size == 16 && t->packed_addr_bits >= 40 && t->packed_addr_bits < 64 &&
              t->packed_origin_high_bits + t->packed_size_bits + t->packed_number_bits == 64 &&
              64 - t->packed_addr_bits + t->packed_origin_high_bits == 64 - t->word_size_bits &&
              t->packed_size_bits <= t->word_size_bits;
    /* The logs of the older blocks' table (version 9). */
    ok = ok && t->array_logged < t->array_slots && t->array_region_base + 8 <= t->array_slots &&
         t->log_place_bits >= 8 && t->log_place_bits <= t->region_shift &&
         t->log_origin_bits == 64 - t->word_size_bits &&
         1 + t->log_place_bits + t->log_origin_bits + t->log_size_bits == 64 &&
         t->log_size_bits <= t->packed_size_bits;
    /* An array's stamp (version 10). */
    ok = ok && t->array_stamp + 8 <= t->array_slots;
    /* Who held each serial (version 8). */
    ok = ok && t->identity_max >= 1 && t->identity_max <= 65535 && t->identity_size >= 8 && t->identity_size <= 64 &&
         t->identity_tid + 4 <= t->identity_size && t->identity_exited < t->identity_size &&
         t->identity_name + (uint64_t)t->thread_name_size <= t->identity_size;
    /* The Ruby tracer's: its state, a slot map, intern tables, string pools. */
    ok = ok && t->ruby_tracer_size >= 64 && t->ruby_tracer_size < (1u << 20) &&
         t->ruby_objects + t->map_count + 8 <= t->ruby_tracer_size &&
         t->ruby_objects + t->map_page_size + 8 <= t->ruby_tracer_size &&
         t->ruby_objects + t->map_slot_size + 8 <= t->ruby_tracer_size &&
         t->ruby_objects + t->map_slots_per_page + 8 <= t->ruby_tracer_size &&
         t->ruby_objects + t->map_pages + 8 <= t->ruby_tracer_size &&
         t->ruby_objects + t->map_page_mask + 8 <= t->ruby_tracer_size &&
         t->ruby_origins + t->intern_tuples + 8 <= t->ruby_tracer_size &&
         t->ruby_origins + t->intern_count + 8 <= t->ruby_tracer_size &&
         t->ruby_sites + t->sites_files + t->pool_len + 8 <= t->ruby_tracer_size &&
         t->ruby_sites + t->sites_files + t->pool_chars + 8 <= t->ruby_tracer_size &&
         t->ruby_sites + t->sites_frames + t->intern_tuples + 8 <= t->ruby_tracer_size &&
         t->ruby_sites + t->sites_frames + t->intern_count + 8 <= t->ruby_tracer_size &&
         t->ruby_origin_names + 8 <= t->ruby_tracer_size && t->ruby_origin_names_bytes + 8 <= t->ruby_tracer_size &&
         t->ruby_class_names + t->pool_chars + 8 <= t->ruby_tracer_size &&
         t->ruby_class_names + t->pool_len + 8 <= t->ruby_tracer_size &&
         t->ruby_sample + 4 <= t->ruby_tracer_size && t->ruby_dropped + 8 <= t->ruby_tracer_size &&
         t->ruby_hidden_len + 8 <= t->ruby_tracer_size && t->ruby_hidden_files < t->ruby_tracer_size &&
         t->ruby_epoch_gc + 8 <= t->ruby_tracer_size && t->ruby_epoch_gc_bytes + 8 <= t->ruby_tracer_size &&
         t->ruby_origin_allocs + 8 <= t->ruby_tracer_size && t->ruby_origin_allocs_bytes + 8 <= t->ruby_tracer_size &&
         t->pc_entry_size >= 8 && t->pc_entry_size <= 64 && t->pc_entry_origin + 4 <= t->pc_entry_size &&
         t->pc_entry_allocs + 4 <= t->pc_entry_size && t->pc_cache_entries <= 65536 &&
         t->ruby_pc_cache + (uint64_t)t->pc_cache_entries * t->pc_entry_size <= t->ruby_tracer_size &&
         t->page_size >= 16 && t->page_size <= 64 && t->page_base + 8 <= t->page_size &&
         t->page_records + 8 <= t->page_size && t->record_size >= 8 && t->record_size <= 64 &&
         t->record_origin + 4 <= t->record_size && t->record_aux + 4 <= t->record_size &&
         t->aux_epoch_shift < 32 && t->tuple_size >= 16 && t->tuple_size <= 64 && t->tuple_a + 8 <= t->tuple_size &&
         t->tuple_b + 8 <= t->tuple_size;
    /* The C heap's frames, Ruby lines and wrappers. */
    ok = ok && t->sites_size >= 16 && t->sites_size <= 4096 &&
         t->sites_files + t->pool_chars + 8 <= t->sites_size && t->sites_files + t->pool_len + 8 <= t->sites_size &&
         t->sites_frames + t->intern_tuples + 8 <= t->sites_size &&
         t->sites_frames + t->intern_count + 8 <= t->sites_size && t->range_size >= 16 && t->range_size <= 64 &&
         t->range_start + 8 <= t->range_size && t->range_end + 8 <= t->range_size && t->wrappers_count < 64 &&
         t->wrappers_ranges < 64 && t->wrappers_max <= (1u << 20) && t->thread_name_size >= 1 &&
         t->thread_name_size <= 64 && t->thread_name + t->thread_name_size <= t->thread_size &&
         t->thread_exited < t->thread_size;
    return ok || core_fail(c, "%s: the tables' descriptor is damaged (an offset outside its structure)", c->path);
}

bool core_read_string(struct core_image *c, uint64_t addr, char *out, size_t size, const char *what)
{
    /* Byte by byte up to a NUL: a string may end right before a segment's end. */
    for (size_t i = 0; i + 1 < size; i++) {
        if (!core_read(c, addr + i, &out[i], 1, what))
            return false;
        if (!out[i])
            return true;
    }
    out[size - 1] = '\0';
    return true;
}

bool core_open(struct core_image *c, const char *path, const char *program)
{
    memset(c, 0, sizeof *c);
    c->fd = -1;
    uint64_t at = 0;
    return open_file(c, path, program) && find_tables(c, &at) && read_descriptor(c, at, &c->tables);
}

/* /proc/PID/maps as a core's notes and regions: the files mapped, and
 * every mapping's permissions. */
static bool read_process_maps(struct core_image *c)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/maps", (long)c->pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return core_fail(c, "no process %ld (%s)", (long)c->pid, strerror(errno));
    char *line = NULL;
    size_t cap = 0, region_cap = 0;
    bool ok = true;
    while (ok && getline(&line, &cap, f) > 0) {
        unsigned long long start, end, offset;
        char perms[8];
        int name_at = 0;
        if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &offset, &name_at) < 4)
            continue;
        line[strcspn(line, "\n")] = '\0';
        uint32_t flags = (perms[0] == 'r' ? PF_R : 0) | (perms[1] == 'w' ? PF_W : 0) | (perms[2] == 'x' ? PF_X : 0);
        struct core_region *regions = c->region_count < region_cap ? c->regions
                                      : realloc(c->regions, (region_cap = region_cap * 2 + 64) * sizeof *regions);
        if (!(ok = regions != NULL))
            break;
        c->regions = regions;
        c->regions[c->region_count++] = (struct core_region){ start, end - start, flags };
        const char *name = name_at ? line + name_at : "";
        if (name[0] == '/')   /* not anonymous, [heap], [stack] */
            ok = core_notes_add(&c->notes, start, end, offset, name);
    }
    free(line);
    fclose(f);
    core_notes_added(&c->notes);
    c->notes.pid = (long)c->pid;
    if (!ok)
        return core_fail(c, "out of memory");
    return c->notes.mapping_count > 0 || core_fail(c, "%s: no file is mapped in it (a kernel thread?)", c->path);
}

bool core_open_process(struct core_image *c, pid_t pid)
{
    memset(c, 0, sizeof *c);
    c->fd = -1;
    c->pid = pid;
    snprintf(c->process_name, sizeof c->process_name, "pid %ld", (long)pid);
    c->path = c->process_name;
    elf_version(EV_CURRENT);
    uint64_t at = 0;
    return read_process_maps(c) && find_tables(c, &at) && read_descriptor(c, at, &c->tables);
}

void core_close(struct core_image *c)
{
    if (c->elf)
        elf_end(c->elf);
    if (c->fd >= 0)
        close(c->fd);
    free(c->segments);
    free(c->regions);
    free(c->bias);
    free(c->bias_state);
    for (size_t i = 0; c->loader_path && i < c->notes.mapping_count; i++)
        free(c->loader_path[i]);
    free(c->loader_path);
    core_notes_free(&c->notes);
    c->elf = NULL;
    c->fd = -1;
    c->segments = NULL;
    c->regions = NULL;
    c->bias = NULL;
    c->bias_state = NULL;
    c->loader_path = NULL;
}

/* The file mapped at `site` and its load bias, each file's read from disk
 * once: false when no file is mapped there or it cannot be read. */
bool core_object(struct core_image *c, uint64_t site, const char **path, uint64_t *bias)
{
    const struct core_mapping *m = NULL;
    for (size_t k = 0; k < c->notes.mapping_count && !m; k++)
        if (site - 1 >= c->notes.mappings[k].start && site - 1 < c->notes.mappings[k].end)
            m = &c->notes.mappings[k];
    size_t first = c->notes.mapping_count;
    for (size_t k = 0; m && k < c->notes.mapping_count && first == c->notes.mapping_count; k++)
        if (strcmp(c->notes.mappings[k].path, m->path) == 0 && c->notes.mappings[k].offset == 0)
            first = k;
    if (first == c->notes.mapping_count)
        return false;
    if (!c->bias) {
        c->bias = calloc(c->notes.mapping_count, sizeof *c->bias);
        c->bias_state = calloc(c->notes.mapping_count, sizeof *c->bias_state);
        c->loader_path = calloc(c->notes.mapping_count, sizeof *c->loader_path);
        if (!c->bias || !c->bias_state || !c->loader_path)
            return false;
    }
    if (!c->bias_state[first])
        c->bias_state[first] =
            load_bias(c, &c->notes.mappings[first], &c->bias[first], &c->loader_path[first]) ? 1 : 2;
    *path = c->loader_path[first] ? c->loader_path[first] : c->notes.mappings[first].path;
    *bias = c->bias[first];
    return c->bias_state[first] == 1;
}

/* A string pool's bytes, NUL-terminated as a whole. */
bool core_read_pool(struct core_image *c, const unsigned char *pool, char **out, uint64_t *len, const char *what)
{
    const struct memprof_tables *t = &c->tables;
    uint64_t at = core_field_u64(pool, t->pool_chars);
    *len = core_field_u64(pool, t->pool_len);
    if (*len > CORE_MAX_POOL)
        return core_fail(c, "%s: %s of %" PRIu64 " bytes: damaged", c->path, what, *len);
    if (!(*out = malloc(*len + 1)))
        return core_fail(c, "out of memory");
    (*out)[*len] = '\0';
    return !*len || core_read(c, at, *out, *len, what);
}

/* An intern table's tuples. */
bool core_read_tuples(struct core_image *c, const unsigned char *table, struct core_pair **out, uint64_t *count,
                        const char *what)
{
    const struct memprof_tables *t = &c->tables;
    uint64_t at = core_field_u64(table, t->intern_tuples);
    *count = core_field_u64(table, t->intern_count);
    if (*count > CORE_MAX_TUPLES)
        return core_fail(c, "%s: %s of %" PRIu64 " entries: damaged", c->path, what, *count);
    unsigned char *raw = malloc(*count * t->tuple_size + 1);
    *out = malloc(*count * sizeof **out + 1);
    bool ok = raw && *out ? !*count || core_read(c, at, raw, *count * t->tuple_size, what) : core_fail(c, "out of memory");
    for (uint64_t i = 0; ok && i < *count; i++)
        (*out)[i] = (struct core_pair){ core_field_u64(raw + i * t->tuple_size, t->tuple_a),
                                   core_field_u64(raw + i * t->tuple_size, t->tuple_b) };
    free(raw);
    return ok;
}

bool core_read_sites(struct core_image *c, const unsigned char *table, struct core_sites *s, const char *what)
{
    const struct memprof_tables *t = &c->tables;
    memset(s, 0, sizeof *s);
    if (!core_read_pool(c, table + t->sites_files, &s->files, &s->files_len, what) ||
        !core_read_tuples(c, table + t->sites_frames, &s->frames, &s->count, what))
        return false;
    for (uint64_t i = 0; i < s->count; i++) {
        const struct core_pair *f = &s->frames[i];
        if ((f->a >> 32) >= s->files_len || (f->b != CORE_SITE_NONE && f->b >= s->count))
            return core_fail(c, "%s: %s: site %" PRIu64 " points outside its table: damaged", c->path, what, i);
    }
    return true;
}

void core_sites_free(struct core_sites *s)
{
    free(s->files);
    free(s->frames);
    memset(s, 0, sizeof *s);
}

/* The permissions of the file's PT_LOAD holding file offset `offset`, on
 * disk: GDB's gcore leaves a file's code out of the core, headers and all. */
static uint32_t disk_flags(const char *path, uint64_t offset)
{
    int fd = core_open_file(path);
    Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
    size_t phnum = 0;
    uint32_t flags = 0;
    if (e && elf_getphdrnum(e, &phnum) == 0) {
        for (size_t i = 0; i < phnum && !flags; i++) {
            GElf_Phdr ph;
            if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && offset >= (ph.p_offset & ~(uint64_t)4095) &&
                offset < ph.p_offset + ph.p_filesz)
                flags = ph.p_flags;
        }
    }
    if (e)
        elf_end(e);
    if (fd >= 0)
        close(fd);
    return flags;
}

void core_write_maps(struct core_image *c, FILE *out)
{
    for (size_t i = 0; i < c->notes.mapping_count; i++) {
        const struct core_mapping *m = &c->notes.mappings[i];
        uint32_t flags = 0;
        bool known = false;
        for (size_t k = 0; k < c->region_count && !known; k++)
            if (m->start >= c->regions[k].vaddr && m->start - c->regions[k].vaddr < c->regions[k].memsz)
                flags = c->regions[k].flags, known = true;
        if (!known)
            flags = disk_flags(m->path, m->offset);
        fprintf(out, "%08" PRIx64 "-%08" PRIx64 " %c%c%cp %08" PRIx64 " 00:00 0 %s\n", m->start, m->end,
                flags & PF_R ? 'r' : '-', flags & PF_W ? 'w' : '-', flags & PF_X ? 'x' : '-', m->offset, m->path);
    }
}
