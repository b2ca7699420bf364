/* memprof core CORE [PROGRAM]: the C heap report of a process that is gone,
 * read from its ELF core file alone. The core's PT_LOAD segments are the
 * process's memory, its NT_FILE note the files mapped; the runtime among
 * them exports memprof_tables (memprof_debugger.h, doc/tables.md), which
 * says where the tables are and how they are laid out. Everything read from
 * the core is checked before it is used: a damaged or foreign layout is one
 * line, never a guess. The rows are written as the runtime writes them and
 * named by the same code as `memprof run --heap` (heap_report_symbolize). */
#include "commands.h"
#include "core_notes.h"
#include "memprof_debugger.h"
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_THREADS 65536
#define MAX_CAPACITY (UINT64_C(1) << 28)
#define MAX_ORIGINS (UINT64_C(1) << 24)

struct segment {
    uint64_t vaddr, filesz, offset;
};

struct core {
    const char *path;
    int fd;
    Elf *elf;
    struct segment *segments;
    size_t segment_count;
    struct core_notes notes;    /* the pid and the files mapped */
    uint64_t *bias;             /* [mapping]: a file's load bias, read once */
    uint8_t *bias_state;        /* [mapping]: 0 not read yet, 1 read, 2 unreadable */
    char why[PATH_MAX + 128];   /* the first problem */
};

static bool fail(struct core *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail(struct core *c, const char *fmt, ...)
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
static bool read_memory(struct core *c, uint64_t addr, void *out, size_t len, const char *what)
{
    for (size_t i = 0; i < c->segment_count; i++) {
        const struct segment *s = &c->segments[i];
        if (addr < s->vaddr || addr - s->vaddr >= s->filesz)
            continue;
        if (len > s->filesz - (addr - s->vaddr))
            break;
        if (pread(c->fd, out, len, (off_t)(s->offset + (addr - s->vaddr))) != (ssize_t)len)
            return fail(c, "%s: truncated: %s at 0x%" PRIx64 " is not in the file", c->path, what, addr);
        return true;
    }
    return fail(c, "%s: %s at 0x%" PRIx64 " is not in the core (a damaged table, or memory not dumped)", c->path, what,
                addr);
}

static bool read_u64(struct core *c, uint64_t addr, uint64_t *v, const char *what)
{
    return read_memory(c, addr, v, 8, what);
}

static bool read_notes(struct core *c)
{
    const char *why = NULL;
    int rc = core_notes_read(c->elf, &c->notes, &why);
    if (rc == -2)
        return fail(c, "out of memory");
    if (rc)
        return fail(c, "%s: %s", c->path, why);
    if (!c->notes.mappings)
        return fail(c, "%s: no NT_FILE note (not a Linux core of a process?)", c->path);
    return true;
}

static bool open_core(struct core *c, const char *path)
{
    c->path = path;
    c->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (c->fd < 0)
        return fail(c, "cannot open %s: %s", path, strerror(errno));
    elf_version(EV_CURRENT);
    c->elf = elf_begin(c->fd, ELF_C_READ_MMAP, NULL);
    GElf_Ehdr eh;
    if (!c->elf || elf_kind(c->elf) != ELF_K_ELF || !gelf_getehdr(c->elf, &eh) || eh.e_type != ET_CORE)
        return fail(c, "%s is not an ELF core file", path);
    if (eh.e_machine != EM_X86_64)
        return fail(c, "%s is a core of another machine than x86-64", path);
    size_t phnum;
    if (elf_getphdrnum(c->elf, &phnum) != 0 || !(c->segments = calloc(phnum + 1, sizeof *c->segments)))
        return fail(c, "%s: no program headers", path);
    off_t size = lseek(c->fd, 0, SEEK_END);
    for (size_t i = 0; i < phnum; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(c->elf, (int)i, &ph) || ph.p_type != PT_LOAD || !ph.p_filesz)
            continue;
        if ((uint64_t)size < ph.p_offset)
            continue;   /* cut off: read_memory says so when it is needed */
        uint64_t present = (uint64_t)size - ph.p_offset < ph.p_filesz ? (uint64_t)size - ph.p_offset : ph.p_filesz;
        c->segments[c->segment_count++] = (struct segment){ ph.p_vaddr, present, ph.p_offset };
    }
    return read_notes(c);
}

/* The load bias of the file mapped at `m` (its first PT_LOAD, on disk). */
static bool load_bias(struct core *c, const struct core_mapping *first, uint64_t *bias)
{
    int fd = open(first->path, O_RDONLY | O_CLOEXEC);
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
    if (e)
        elf_end(e);
    if (fd >= 0)
        close(fd);
    return found || fail(c, "cannot read %s, mapped in the core, on disk", first->path);
}

/* The address of memprof_tables in the process: the runtime among the
 * mapped files, and the symbol in its .dynsym on disk. */
static bool find_tables(struct core *c, uint64_t *addr)
{
    const struct core_mapping *runtime = NULL;
    for (size_t i = 0; i < c->notes.mapping_count && !runtime; i++) {
        const char *slash = strrchr(c->notes.mappings[i].path, '/');
        if (slash && strcmp(slash, "/libmemprof.so") == 0 && c->notes.mappings[i].offset == 0)
            runtime = &c->notes.mappings[i];
    }
    if (!runtime)
        return fail(c, "%s: the memprof runtime was not loaded in pid %ld (no libmemprof.so among its files)", c->path,
                    c->notes.pid);
    uint64_t bias;
    if (!load_bias(c, runtime, &bias))
        return false;
    int fd = open(runtime->path, O_RDONLY | O_CLOEXEC);
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
    return found || fail(c, "%s: %s has no memprof_tables (a memprof older than the core reader?)", c->path,
                         runtime->path);
}

/* The descriptor, checked: this reader's version, sizes that hold what they
 * say, offsets inside their structures. */
static bool read_descriptor(struct core *c, uint64_t addr, struct memprof_tables *t)
{
    memset(t, 0, sizeof *t);
    if (!read_memory(c, addr, t, offsetof(struct memprof_tables, heap_running), "the tables' descriptor"))
        return false;
    if (memcmp(t->magic, MEMPROF_TABLES_MAGIC, sizeof t->magic) != 0)
        return fail(c, "%s: the tables' descriptor is damaged (no magic)", c->path);
    if (t->version != MEMPROF_TABLES_VERSION)
        return fail(c, "%s: the tables' layout is version %u; this memprof reads version %u", c->path, t->version,
                    MEMPROF_TABLES_VERSION);
    if (t->size != sizeof *t)
        return fail(c, "%s: the tables' descriptor is %u bytes, not %zu: damaged", c->path, t->size, sizeof *t);
    if (!read_memory(c, addr, t, sizeof *t, "the tables' descriptor"))
        return false;
    bool ok = t->thread_size >= 64 && t->thread_size < (1u << 20) && t->young_slots && t->young_slots <= 65536 &&
              t->thread_next + 8 <= t->thread_size && t->thread_serial + 4 <= t->thread_size &&
              t->thread_tid + 4 <= t->thread_size &&
              t->thread_young + (uint64_t)t->young_slots * t->slot_size <= t->thread_size &&
              t->thread_blocks + t->table_array + 8 <= t->thread_size &&
              t->thread_freed + t->table_array + 8 <= t->thread_size && t->thread_origins + 8 <= t->thread_size &&
              t->thread_origin_count + 8 <= t->thread_size && t->array_capacity + 8 <= t->array_slots &&
              t->slot_size >= 24 && t->slot_size <= 64 && t->slot_addr + 8 <= t->slot_size &&
              t->slot_number + 8 <= t->slot_size && t->slot_word + 8 <= t->slot_size && t->word_size_bits >= 32 &&
              t->word_size_bits < 64 && t->origin_size >= 8 && t->origin_size <= 256 &&
              t->origin_key + 8 <= t->origin_size && t->origin_link + 8 <= t->origin_size &&
              t->origin_total_count + 8 <= t->origin_size && t->origin_total_bytes + 8 <= t->origin_size &&
              t->origin_peak_bytes + 8 <= t->origin_size && t->origin_array_records >= 8 &&
              t->origin_array_records <= 64 && t->thread_shift > 32 && t->thread_shift < 64;
    return ok || fail(c, "%s: the tables' descriptor is damaged (an offset outside its structure)", c->path);
}

/* The file mapped at `site` and its load bias, each file's read from disk
 * once: false when no file is mapped there or it cannot be read. */
static bool site_object(struct core *c, uint64_t site, const char **path, uint64_t *bias)
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
        if (!c->bias || !c->bias_state)
            return false;
    }
    if (!c->bias_state[first])
        c->bias_state[first] = load_bias(c, &c->notes.mappings[first], &c->bias[first]) ? 1 : 2;
    *path = c->notes.mappings[first].path;
    *bias = c->bias[first];
    return c->bias_state[first] == 1;
}

struct hold {
    uint64_t addr, order, word;
    uint32_t thread;
};

struct origin_sum {
    uint64_t site, live_count, live_bytes, peak, total_count, total_bytes;
};

static int by_addr_then_order(const void *a, const void *b)
{
    const struct hold *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    if (x->order != y->order)
        return x->order < y->order ? -1 : 1;
    return x->thread < y->thread ? -1 : x->thread > y->thread;
}

static int by_site(const void *a, const void *b)
{
    const struct origin_sum *x = a, *y = b;
    return x->site < y->site ? -1 : x->site > y->site;
}

static int by_live_bytes(const void *a, const void *b)
{
    const struct origin_sum *x = a, *y = b;
    if (x->live_bytes != y->live_bytes)
        return x->live_bytes > y->live_bytes ? -1 : 1;
    return x->site < y->site ? -1 : x->site > y->site;
}

/* A table's slots (young, blocks or freed) as events. */
static bool read_slots(struct core *c, const struct memprof_tables *t, uint64_t at, uint64_t count, uint32_t thread,
                       bool freed, struct hold **events, size_t *n, size_t *cap)
{
    if (count > MAX_CAPACITY)
        return fail(c, "%s: a block table of %" PRIu64 " slots: damaged", c->path, count);
    unsigned char *slots = malloc(count * t->slot_size + 1);
    if (!slots)
        return fail(c, "out of memory");
    bool ok = read_memory(c, at, slots, count * t->slot_size, "a block table");
    for (uint64_t i = 0; ok && i < count; i++) {
        uint64_t addr, number, word;
        memcpy(&addr, slots + i * t->slot_size + t->slot_addr, 8);
        memcpy(&number, slots + i * t->slot_size + t->slot_number, 8);
        memcpy(&word, slots + i * t->slot_size + t->slot_word, 8);
        if (!addr || (addr & 1))
            continue;   /* empty, or a tombstone */
        if (*n == *cap) {
            *cap = *cap ? *cap * 2 : 4096;
            struct hold *grown = realloc(*events, *cap * sizeof **events);
            if (!grown) {
                ok = fail(c, "out of memory");
                break;
            }
            *events = grown;
        }
        (*events)[(*n)++] = (struct hold){ addr, number * 2 + freed, word, thread };
    }
    free(slots);
    return ok;
}

struct thread_read {
    uint32_t serial;
    int32_t tid;
    uint64_t origins;        /* the origin array's records */
    uint64_t origin_count;
    struct origin_sum *sums; /* [origin_count] */
};

/* The raw heap report, as the runtime writes it, into `out`. */
static bool write_raw_report(struct core *c, const struct memprof_tables *t, FILE *out)
{
    uint64_t next;
    if (!read_u64(c, t->heap_threads, &next, "the heap tracer's threads"))
        return false;
    struct thread_read *threads = NULL;
    size_t thread_count = 0, cap = 0, n = 0;
    struct hold *events = NULL;
    bool ok = true;
    unsigned char *thread = malloc(t->thread_size);
    if (!thread)
        return fail(c, "out of memory");
    while (next && ok) {
        if (thread_count == MAX_THREADS) {
            ok = fail(c, "%s: more than %d heap threads, or a loop: damaged", c->path, MAX_THREADS);
            break;
        }
        if (!(ok = read_memory(c, next, thread, t->thread_size, "a heap thread")))
            break;
        struct thread_read *grown = realloc(threads, (thread_count + 1) * sizeof *threads);
        if (!grown) {
            ok = fail(c, "out of memory");
            break;
        }
        threads = grown;
        struct thread_read *r = &threads[thread_count];
        memset(r, 0, sizeof *r);
        memcpy(&r->serial, thread + t->thread_serial, 4);
        memcpy(&r->tid, thread + t->thread_tid, 4);
        uint32_t view = (uint32_t)thread_count++;
        ok = read_slots(c, t, next + t->thread_young, t->young_slots, view, false, &events, &n, &cap);
        for (int table = 0; ok && table < 2; table++) {
            uint64_t array, capacity;
            memcpy(&array, thread + (table ? t->thread_freed : t->thread_blocks) + t->table_array, 8);
            if (array && (ok = read_u64(c, array + t->array_capacity, &capacity, "a block table's capacity")))
                ok = read_slots(c, t, array + t->array_slots, capacity, view, table == 1, &events, &n, &cap);
        }
        uint64_t origins;
        memcpy(&origins, thread + t->thread_origins, 8);
        memcpy(&r->origin_count, thread + t->thread_origin_count, 8);
        if (ok && origins) {
            uint64_t capacity;
            ok = read_u64(c, origins, &capacity, "an origin array");
            if (ok && (r->origin_count > capacity || capacity > MAX_ORIGINS))
                ok = fail(c, "%s: %" PRIu64 " origins in an array of %" PRIu64 ": damaged", c->path, r->origin_count,
                          capacity);
            r->origins = origins + t->origin_array_records;
        } else {
            r->origin_count = 0;
        }
        if (ok && r->origin_count && !(r->sums = calloc(r->origin_count, sizeof *r->sums)))
            ok = fail(c, "out of memory");
        memcpy(&next, thread + t->thread_next, 8);
    }
    free(thread);
    /* Each origin's counters, and which of its blocks live: at each address
     * the last event (by number, then the newer thread) decides. */
    unsigned char origin[256];
    for (size_t i = 0; ok && i < thread_count; i++) {
        for (uint64_t k = 0; ok && k < threads[i].origin_count; k++) {
            if (!(ok = read_memory(c, threads[i].origins + k * t->origin_size, origin, t->origin_size, "an origin")))
                break;
            struct origin_sum *s = &threads[i].sums[k];
            uint64_t key;
            memcpy(&key, origin + t->origin_key, 8);
            s->site = key >> t->thread_shift ? key & ((UINT64_C(1) << t->thread_shift) - 1) : 0;
            memcpy(&s->total_count, origin + t->origin_total_count, 8);
            memcpy(&s->total_bytes, origin + t->origin_total_bytes, 8);
            memcpy(&s->peak, origin + t->origin_peak_bytes, 8);
        }
    }
    if (ok)
        qsort(events, n, sizeof *events, by_addr_then_order);
    size_t live_blocks = 0;
    for (size_t e = 0; ok && e < n; e++) {
        if (e + 1 < n && events[e + 1].addr == events[e].addr)
            continue;   /* a later event at this address decides */
        if (events[e].order & 1)
            continue;   /* freed */
        struct thread_read *r = &threads[events[e].thread];
        uint64_t o = events[e].word >> t->word_size_bits;
        if (o >= r->origin_count)
            continue;
        r->sums[o].live_count++;
        r->sums[o].live_bytes += events[e].word & ((UINT64_C(1) << t->word_size_bits) - 1);
        live_blocks++;
    }
    /* Rows: the origins of one site, from every thread, together. */
    size_t total = 0;
    for (size_t i = 0; i < thread_count; i++)
        total += threads[i].origin_count;
    struct origin_sum *rows = ok ? calloc(total ? total : 1, sizeof *rows) : NULL;
    size_t row_count = 0;
    if (ok && !rows)
        ok = fail(c, "out of memory");
    for (size_t i = 0; ok && i < thread_count; i++)
        for (uint64_t k = 0; k < threads[i].origin_count; k++)
            if (threads[i].sums[k].site && threads[i].sums[k].live_count) {
                struct origin_sum *r = &rows[row_count++];
                *r = threads[i].sums[k];
                /* The owner's peak misses frees by other threads; it is
                 * never below what lives now (as the runtime's report). */
                if (r->peak < r->live_bytes)
                    r->peak = r->live_bytes;
            }
    if (ok) {
        qsort(rows, row_count, sizeof *rows, by_site);
        size_t kept = 0;
        for (size_t i = 0; i < row_count; i++) {
            struct origin_sum *r = &rows[i], *into = kept ? &rows[kept - 1] : NULL;
            if (into && into->site == r->site) {
                into->live_count += r->live_count, into->live_bytes += r->live_bytes;
                into->total_count += r->total_count, into->total_bytes += r->total_bytes;
                into->peak += r->peak;
            } else {
                rows[kept++] = *r;
            }
        }
        row_count = kept;
        qsort(rows, row_count, sizeof *rows, by_live_bytes);
        fprintf(out, "# memprof heap: live blocks by call site (count bytes peak_bytes total_count total_bytes site "
                     "object+offset)\n# pid %ld\n# frames 1\n# tables %zu 0\n",
                c->notes.pid, live_blocks);
        /* "# thread SERIAL TID live_count live_bytes total_count NAME", oldest
         * first, as the runtime writes them; a core keeps no thread's name. */
        for (size_t i = thread_count; i-- > 0;) {
            uint64_t count = 0, bytes = 0, allocs = 0;
            for (uint64_t k = 0; k < threads[i].origin_count; k++) {
                count += threads[i].sums[k].live_count;
                bytes += threads[i].sums[k].live_bytes;
                allocs += threads[i].sums[k].site ? threads[i].sums[k].total_count : 0;
            }
            if (allocs)
                fprintf(out, "# thread %u %d %" PRIu64 " %" PRIu64 " %" PRIu64 " ?\n", threads[i].serial,
                        threads[i].tid, count, bytes, allocs);
        }
        for (size_t i = 0; i < row_count; i++) {
            const struct origin_sum *r = &rows[i];
            fprintf(out, "%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " 0x%" PRIx64 " ", r->live_count,
                    r->live_bytes, r->peak, r->total_count, r->total_bytes, r->site);
            const char *object;
            uint64_t bias;
            if (site_object(c, r->site, &object, &bias))
                fprintf(out, "%s+0x%" PRIx64 "\n", object, r->site - bias);
            else
                fputs("?\n", out);
        }
    }
    free(rows);
    for (size_t i = 0; i < thread_count; i++)
        free(threads[i].sums);
    free(threads);
    free(events);
    return ok;
}

/* The C heap report of the core at `path`, named, into `out`: 0, or 1 after
 * one line in `why`. */
int core_heap_report(const char *path, FILE *out, const struct heap_report_options *opt, char *why, size_t why_size)
{
    struct core c = { .fd = -1 };
    uint64_t tables_at = 0;
    struct memprof_tables t;
    char *raw = NULL;
    size_t raw_len = 0;
    FILE *raw_out = NULL;
    bool ok = open_core(&c, path) && find_tables(&c, &tables_at) && read_descriptor(&c, tables_at, &t) &&
              (raw_out = open_memstream(&raw, &raw_len)) && write_raw_report(&c, &t, raw_out);
    if (raw_out)
        fclose(raw_out);
    int rc = 0;
    if (!ok) {
        snprintf(why, why_size, "memprof: %s", c.why[0] ? c.why : "out of memory");
        rc = 1;
    } else {
        FILE *in = fmemopen(raw, raw_len, "r");
        rc = in && heap_report_symbolize(in, out, (pid_t)c.notes.pid, opt) == 0 ? 0 : 1;
        if (rc)
            snprintf(why, why_size, "memprof: cannot write the report of %s", path);
        if (in)
            fclose(in);
    }
    free(raw);
    if (c.elf)
        elf_end(c.elf);
    if (c.fd >= 0)
        close(c.fd);
    free(c.segments);
    free(c.bias);
    free(c.bias_state);
    core_notes_free(&c.notes);
    return rc;
}

/* The core GDB reads, from `info target` on stdin ("Local core dump file:",
 * then a tab and `PATH', file type ..."). */
static bool core_of_gdb_target(char *path, size_t size)
{
    char line[PATH_MAX + 64];
    bool next = false;
    while (fgets(line, sizeof line, stdin)) {
        if (strncmp(line, "Local core dump file:", 21) == 0) {
            next = true;
        } else if (next) {
            char *start = strchr(line, '`'), *end = start ? strstr(start, "', file type") : NULL;
            if (!end)
                return false;
            snprintf(path, size, "%.*s", (int)(end - start - 1), start + 1);
            return true;
        }
    }
    return false;
}

int cmd_core(int argc, char **argv)
{
    struct heap_report_options opt = { 0, NULL, "in the core of" };
    const char *path = NULL;
    char gdb_core[PATH_MAX];
    bool usage = false;
    for (int i = 0; i < argc && !usage; i++) {
        if (strcmp(argv[i], "--top") == 0 && i + 1 < argc) {
            opt.top = strtoul(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--filter") == 0 && i + 1 < argc) {
            opt.filter = argv[++i];
        } else if (strcmp(argv[i], "--heap") == 0) {
            /* the only table read from a core so far */
        } else if (strcmp(argv[i], "--gdb-target") == 0) {
            /* GDB's memprof-info heap on a core: `info target` on stdin names it */
            if (!core_of_gdb_target(gdb_core, sizeof gdb_core)) {
                fputs("memprof: GDB reads no core file\n", stderr);
                return 1;
            }
            path = gdb_core;
        } else if (argv[i][0] == '-' || (path && path != gdb_core && i + 1 < argc)) {
            usage = true;
        } else if (!path) {
            path = argv[i];
        }
    }
    if (usage || !path) {
        fputs("memprof: usage: memprof core [--top N] [--filter TEXT] CORE [PROGRAM]\n", stderr);
        return 2;
    }
    char why[PATH_MAX + 160];
    int rc = core_heap_report(path, stdout, &opt, why, sizeof why);
    if (rc)
        fprintf(stderr, "%s\n", why);
    return rc;
}
