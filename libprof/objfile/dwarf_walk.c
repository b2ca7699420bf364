#include "dwarf_walk.h"
#include <dwarf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libdeflate.h>
#include <libelf.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#define SECTION_POPULATED_FROM ((size_t)64 << 10)
#define STREAM_CHUNK ((size_t)256 << 10)

/* libdwarf reads the file through this interface rather than its own ELF
 * reader: libelf inflates a compressed section only when libdwarf loads it,
 * and the sections memprof never reads are not offered. libdwarf 20210528
 * inflates .debug_loclists whenever it loads .debug_info (location lists:
 * a tenth of naming one libc address). */
struct dwarf_file {
    int fd;
    Elf *elf;
    size_t sections, names;
    bool locations;      /* the location lists offered (dwarf_walk_open_locations) */
    Dwarf_Debug dbg;
    Dwarf_Obj_Access_Interface interface;
    /* Each compressed section, inflated when libdwarf loads it, or ahead by
     * the thread of dwarf_walk_open_ahead; freed at close. */
    struct compressed *compressed;
    size_t compressed_count;
    pthread_mutex_t lock;    /* the states, and stop */
    pthread_cond_t settled;  /* a section left INFLATING */
    pthread_t ahead;
    bool ahead_running, stop;
    bool ahead_idle;         /* the thread ahead found no more to take and ended */
    struct compressed *info_stream;   /* .debug_info, streamed (dwarf_walk_open_ahead), or NULL */
};

struct compressed {
    Dwarf_Half index;
    bool ahead;                        /* the thread may take it */
    enum { WAITING, INFLATING, READY, FAILED } state;
    const unsigned char *raw;          /* the zlib stream, in libelf's mapping */
    size_t raw_size, size;             /* size: inflated, from the header */
    void *data;
    size_t mapped;                     /* data's mapping's length; 0: malloc'ed */
    /* .debug_info of a lookup (dwarf_file's info_stream): inflated only as
     * far as the units asked for (dwarf_walk_need_unit), by the caller's thread. */
    bool broken;
    bool planned;                      /* .debug_info given to the thread ahead instead */
    z_stream *stream;                  /* between calls; NULL before the first and after the end */
    size_t ready;                      /* the bytes inflated, from the start */
    size_t units_end;                  /* the end of the last whole unit asked for */
};

/* Room for an inflated section. One of 64 KiB or more is mapped, all its
 * pages in one call: one fault a page cost a first run more than a quarter
 * of its inflating. Small pages, not huge ones: on a VM whose host takes
 * back idle memory (free page reporting), a huge page is faulted in again
 * 4 KiB at a time: a first run after a rest took 30-99 ms (mean 48) with
 * huge pages, 30-63 ms (mean 40) with small ones, the same when the memory
 * is warm (doc/benchmarks.md, 2026-11-30, eighth). A streamed section's
 * room is all zero (the part not yet inflated reads as no unit), its pages
 * populated as the stream reaches them. */
static void *section_room(size_t size, size_t *mapped, bool streamed)
{
    *mapped = 0;
    if (size < SECTION_POPULATED_FROM)
        return streamed ? calloc(1, size) : malloc(size);
    size_t length = (size + 4095) & ~(size_t)4095;
    char *p = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | (streamed ? 0 : MAP_POPULATE),
                   -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    *mapped = length;
    return p;
}

static void section_free(void *data, size_t mapped)
{
    if (mapped)
        munmap(data, mapped);
    else
        free(data);
}

static bool hidden(const char *name)
{
    return strcmp(name, ".debug_loclists") == 0 || strcmp(name, ".debug_loc") == 0;
}

static int section_info(void *obj, Dwarf_Half index, Dwarf_Obj_Access_Section *out, int *error)
{
    struct dwarf_file *f = obj;
    Elf_Scn *scn = elf_getscn(f->elf, index);
    GElf_Shdr sh;
    (void)error;
    if (!scn || !gelf_getshdr(scn, &sh))
        return DW_DLV_NO_ENTRY;
    const char *name = elf_strptr(f->elf, f->names, sh.sh_name);
    *out = (Dwarf_Obj_Access_Section){ .addr = sh.sh_addr, .type = sh.sh_type, .size = sh.sh_size,
                                       .name = name ? name : "", .link = sh.sh_link, .info = sh.sh_info,
                                       .entrysize = sh.sh_entsize };
    GElf_Chdr chdr;
    if ((sh.sh_flags & SHF_COMPRESSED) && gelf_getchdr(scn, &chdr))
        out->size = chdr.ch_size;   /* what libdwarf will be given */
    if (name && !f->locations && hidden(name))
        out->name = ".memprof.unused";
    if (sh.sh_type == SHT_NOBITS)
        out->size = 0;
    return DW_DLV_OK;
}

static Dwarf_Endianness byte_order(void *obj)
{
    (void)obj;
    return DW_OBJECT_LSB;
}

static Dwarf_Small length_size(void *obj)
{
    (void)obj;
    return 4;
}

static Dwarf_Small pointer_size(void *obj)
{
    (void)obj;
    return 8;
}

static Dwarf_Unsigned section_count(void *obj)
{
    return ((struct dwarf_file *)obj)->sections;
}

/* All of `c` (a zlib stream, ELFCOMPRESS_ZLIB) into `out` with libdeflate,
 * about three times as fast as libelf's zlib. */
static bool inflate_into(const struct compressed *c, void *out)
{
    size_t got = 0;
    struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
    bool ok = d && libdeflate_zlib_decompress(d, c->raw, c->raw_size, out, c->size, &got) == LIBDEFLATE_SUCCESS &&
              got == c->size;
    if (d)
        libdeflate_free_decompressor(d);
    return ok;
}

/* Inflate `c` into room of its own: READY, or FAILED for libelf to try.
 * Touches no libelf state: the thread ahead runs it beside libdwarf. */
static int inflate_section(struct compressed *c)
{
    size_t mapped = 0;
    void *out = section_room(c->size, &mapped, false);
    bool ok = out && inflate_into(c, out);
    if (!ok) {
        if (out)
            section_free(out, mapped);
        return FAILED;
    }
    c->data = out;
    c->mapped = mapped;
    return READY;
}

static void populate(const struct compressed *c, size_t from, size_t to)
{
#ifdef MADV_POPULATE_WRITE
    if (c->mapped) {   /* one call for the chunk's pages, not a fault each */
        uintptr_t start = ((uintptr_t)c->data + from) & ~(uintptr_t)4095;
        madvise((void *)start, (uintptr_t)c->data + to - start, MADV_POPULATE_WRITE);
    }
#else
    (void)c, (void)from, (void)to;
#endif
}

static void stream_end(struct compressed *c)
{
    if (c->stream) {
        inflateEnd(c->stream);
        free(c->stream);
        c->stream = NULL;
    }
}

/* The whole of streamed `c` with libdeflate, over what was streamed (zlib
 * streams at about 2/5 of libdeflate's speed). */
static bool inflate_whole(struct compressed *c)
{
    stream_end(c);
    populate(c, c->ready, c->size);
    bool ok = inflate_into(c, c->data);
    c->broken = !ok;
    if (ok)
        c->ready = c->size;
    return ok;
}

/* Streamed `c` inflated through its first `target` bytes. */
static bool stream_to(struct compressed *c, size_t target)
{
    if (target > c->size)
        target = c->size;
    if (c->ready >= target)
        return true;
    if (c->broken)
        return false;
    /* Past a quarter, all at once: lookups spread through the section
     * (1,000 of libc's functions) then cost 1.6 times inflating it all at
     * once, not 2.5 times (streaming it all); one lookup, at most that. */
    if (target > c->size / 4)
        return inflate_whole(c);
    if (!c->stream) {
        /* The deflate data inside the zlib header, inflated raw: the
         * stream's Adler-32 is at its end, which a prefix never reaches, and
         * computing it was a sixth of the inflating. */
        bool zlib_header = c->raw_size > 2 && (c->raw[0] & 0x0f) == Z_DEFLATED && !(c->raw[1] & 0x20) &&
                           (c->raw[0] << 8 | c->raw[1]) % 31 == 0;
        if (!zlib_header || !(c->stream = calloc(1, sizeof *c->stream)) ||
            inflateInit2(c->stream, -MAX_WBITS) != Z_OK) {
            free(c->stream);
            c->stream = NULL;
            return inflate_whole(c);
        }
        c->stream->next_in = (Bytef *)c->raw + 2;
        c->stream->avail_in = (uInt)(c->raw_size - 2);
    }
    while (c->ready < target) {
        size_t chunk = c->size - c->ready < STREAM_CHUNK ? c->size - c->ready : STREAM_CHUNK;
        populate(c, c->ready, c->ready + chunk);
        c->stream->next_out = (Bytef *)c->data + c->ready;
        c->stream->avail_out = (uInt)chunk;
        int rc = inflate(c->stream, Z_NO_FLUSH);
        size_t made = chunk - c->stream->avail_out;
        c->ready += made;
        if (rc == Z_STREAM_END || (rc != Z_OK && rc != Z_BUF_ERROR) || made == 0) {
            c->broken = c->ready != c->size;
            stream_end(c);
            return !c->broken;
        }
    }
    return true;
}

/* The streamed section's room, made when first asked for; without it
 * libelf inflates the section whole. Never the thread ahead's: no lock. */
static struct compressed *stream_open(struct dwarf_file *f)
{
    struct compressed *c = f->info_stream;
    if (c && c->state == WAITING) {
        c->state = (c->data = section_room(c->size, &c->mapped, true)) ? READY : FAILED;
        if (c->state == FAILED)
            f->info_stream = c = NULL;
    }
    return c;
}

bool dwarf_walk_need_unit(struct dwarf_file *f, uint64_t header)
{
    struct compressed *c = stream_open(f);
    if (!c || header < c->units_end)
        return true;
    if (header >= c->size || !stream_to(c, header + 12))   /* the longest initial length */
        return false;
    const unsigned char *data = c->data, *p;
    uint64_t length;
    size_t offset_size;
    if (!(p = dwarf_walk_initial_length(data + header, data + c->size, &length, &offset_size)))
        return false;
    size_t end = (size_t)(p - data) + length;
    if (!stream_to(c, end))
        return false;
    if (end > c->units_end)
        c->units_end = end;
    return true;
}

bool dwarf_walk_need_offset(struct dwarf_file *f, uint64_t offset)
{
    struct compressed *c = stream_open(f);
    while (c && c->units_end <= offset)
        if (!dwarf_walk_need_unit(f, c->units_end))
            return false;
    return true;
}

static void start_ahead(struct dwarf_file *f);

void dwarf_walk_plan(struct dwarf_file *f, uint64_t header)
{
    struct compressed *c = f->info_stream;
    if (!c || c->state != WAITING || header <= c->size / 4)
        return;
    pthread_mutex_lock(&f->lock);
    c->ahead = c->planned = true;
    f->info_stream = NULL;
    bool ended = f->ahead_running && f->ahead_idle;
    pthread_mutex_unlock(&f->lock);
    if (ended) {   /* done with the rest already: a thread again for this one */
        pthread_join(f->ahead, NULL);
        f->ahead_running = f->ahead_idle = false;
    }
    if (!f->ahead_running)
        start_ahead(f);
}

bool dwarf_walk_need_all(struct dwarf_file *f)
{
    struct compressed *c = stream_open(f);
    if (c && stream_to(c, c->size))
        c->units_end = c->size;
    return !c || !c->broken;
}

/* A section WAITING that the thread ahead may take: .debug_info when the
 * first lookup planned it (the longest, and the lookup waits for it), else
 * the smallest (the others are small beside it: they are done by the time
 * the plan is made, or the one in hand is). Under the lock. */
static struct compressed *next_ahead(struct dwarf_file *f)
{
    struct compressed *best = NULL;
    for (size_t i = 0; i < f->compressed_count; i++) {
        struct compressed *c = &f->compressed[i];
        if (c->ahead && c->state == WAITING && (!best || c->planned || (!best->planned && c->size < best->size)))
            best = c;
    }
    return best;
}

/* Inflate `c`, claimed (INFLATING) by the caller, and publish it. */
static void settle(struct dwarf_file *f, struct compressed *c)
{
    int state = inflate_section(c);
    pthread_mutex_lock(&f->lock);
    c->state = state;
    pthread_cond_broadcast(&f->settled);
    pthread_mutex_unlock(&f->lock);
}

static void *inflate_ahead(void *arg)
{
    struct dwarf_file *f = arg;
    for (;;) {
        pthread_mutex_lock(&f->lock);
        struct compressed *c = f->stop ? NULL : next_ahead(f);
        if (c)
            c->state = INFLATING;
        else
            f->ahead_idle = true;
        pthread_mutex_unlock(&f->lock);
        if (!c)
            return NULL;
        settle(f, c);
    }
}

/* `index`'s inflated bytes, or NULL (not compressed with zlib, or damaged:
 * libelf then tries). While the thread ahead inflates it, this thread
 * inflates another waiting section rather than wait. */
static void *inflated(struct dwarf_file *f, Dwarf_Half index)
{
    struct compressed *c = NULL;
    for (size_t i = 0; i < f->compressed_count && !c; i++)
        if (f->compressed[i].index == index)
            c = &f->compressed[i];
    if (!c)
        return NULL;
    if (c == f->info_stream)
        stream_open(f);
    pthread_mutex_lock(&f->lock);
    while (c->state == WAITING || c->state == INFLATING) {
        struct compressed *other = c->state == WAITING ? c : next_ahead(f);
        if (other) {
            other->state = INFLATING;
            pthread_mutex_unlock(&f->lock);
            settle(f, other);
            pthread_mutex_lock(&f->lock);
        } else {
            pthread_cond_wait(&f->settled, &f->lock);
        }
    }
    void *data = c->state == READY ? c->data : NULL;
    pthread_mutex_unlock(&f->lock);
    return data;
}

static int load_section(void *obj, Dwarf_Half index, Dwarf_Small **data, int *error)
{
    struct dwarf_file *f = obj;
    Elf_Scn *scn = elf_getscn(f->elf, index);
    GElf_Shdr sh;
    (void)error;
    if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
        return DW_DLV_NO_ENTRY;
    if (sh.sh_flags & SHF_COMPRESSED) {
        void *bytes = inflated(f, index);
        if (bytes) {
            *data = bytes;
            return DW_DLV_OK;
        }
    }
    if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
        return DW_DLV_NO_ENTRY;
    Elf_Data *d = elf_getdata(scn, NULL);
    if (!d || !d->d_buf)
        return DW_DLV_NO_ENTRY;
    *data = d->d_buf;
    return DW_DLV_OK;
}

uint64_t dwarf_walk_little_endian(const unsigned char *p, size_t bytes)
{
    uint64_t v = 0;
    for (size_t i = bytes; i-- > 0;)
        v = v << 8 | p[i];
    return v;
}

const unsigned char *dwarf_walk_initial_length(const unsigned char *p, const unsigned char *end, uint64_t *length,
                                               size_t *offset_size)
{
    if (end - p < 4)
        return NULL;
    *length = dwarf_walk_little_endian(p, 4);
    *offset_size = 4;
    p += 4;
    if (*length == 0xffffffff) {
        if (end - p < 8)
            return NULL;
        *length = dwarf_walk_little_endian(p, 8);
        *offset_size = 8;
        p += 8;
    }
    return *length <= (uint64_t)(end - p) ? p : NULL;
}

const unsigned char *dwarf_walk_section(struct dwarf_file *f, const char *name, size_t *size)
{
    for (size_t i = 1; i < f->sections && i <= 0xffff; i++) {
        Elf_Scn *scn = elf_getscn(f->elf, i);
        GElf_Shdr sh;
        const char *here;
        if (!scn || !gelf_getshdr(scn, &sh) || !(here = elf_strptr(f->elf, f->names, sh.sh_name)) ||
            strcmp(here, name) != 0)
            continue;
        Dwarf_Obj_Access_Section info;
        Dwarf_Small *data;
        int error;
        if (section_info(f, (Dwarf_Half)i, &info, &error) != DW_DLV_OK ||
            load_section(f, (Dwarf_Half)i, &data, &error) != DW_DLV_OK)
            return NULL;
        *size = info.size;
        return data;
    }
    return NULL;
}

static const Dwarf_Obj_Access_Methods methods = {
    .get_section_info = section_info,
    .get_byte_order = byte_order,
    .get_length_size = length_size,
    .get_pointer_size = pointer_size,
    .get_section_count = section_count,
    .load_section = load_section,
    .relocate_a_section = NULL,   /* linked objects: nothing to relocate */
};

/* The sections a lookup of lines and inlined calls reads: the ones the
 * thread of dwarf_walk_open_ahead inflates before libdwarf asks. */
static bool read_by_lookups(const char *name)
{
    static const char *const names[] = { ".debug_info", ".debug_abbrev", ".debug_line", ".debug_str",
                                         ".debug_line_str", ".debug_rnglists", ".debug_ranges", ".debug_addr",
                                         ".debug_str_offsets", ".debug_aranges" };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcmp(name, names[i]) == 0)
            return true;
    return false;
}

/* The zlib-compressed sections, each found in libelf's mapping now so that
 * the thread ahead never calls libelf. False: out of memory. */
static bool list_compressed(struct dwarf_file *f, bool ahead)
{
    f->compressed = calloc(f->sections ? f->sections : 1, sizeof *f->compressed);
    if (!f->compressed)
        return false;
    for (size_t i = 1; i < f->sections && i <= 0xffff; i++) {
        Elf_Scn *scn = elf_getscn(f->elf, i);
        GElf_Shdr sh;
        GElf_Chdr chdr;
        if (!scn || !gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_COMPRESSED) || sh.sh_type == SHT_NOBITS)
            continue;
        Elf_Data *raw = elf_rawdata(scn, NULL);
        const char *name = elf_strptr(f->elf, f->names, sh.sh_name);
        if (!raw || !raw->d_buf || !name || !gelf_getchdr(scn, &chdr) || chdr.ch_type != ELFCOMPRESS_ZLIB ||
            raw->d_size <= sizeof(Elf64_Chdr) || chdr.ch_size == 0 || chdr.ch_size > ((uint64_t)1 << 34))
            continue;
#ifdef MADV_POPULATE_READ
        if (ahead) {   /* the stream's pages mapped in one call, not a fault each */
            uintptr_t from = (uintptr_t)raw->d_buf & ~(uintptr_t)4095;
            madvise((void *)from, (uintptr_t)raw->d_buf + raw->d_size - from, MADV_POPULATE_READ);
        }
#endif
        /* A lookup needs .debug_info only as far as its units: streamed. */
        bool streamed = ahead && strcmp(name, ".debug_info") == 0 && raw->d_size <= UINT32_MAX;
        if (streamed)
            f->info_stream = &f->compressed[f->compressed_count];
        f->compressed[f->compressed_count++] = (struct compressed){
            .index = (Dwarf_Half)i,
            .ahead = ahead && !streamed && read_by_lookups(name),
            .raw = (const unsigned char *)raw->d_buf + sizeof(Elf64_Chdr),
            .raw_size = raw->d_size - sizeof(Elf64_Chdr),
            .size = chdr.ch_size,
        };
    }
    return true;
}

/* The thread ahead, taking no signal; none when no section is its to take. */
static void start_ahead(struct dwarf_file *f)
{
    pthread_mutex_lock(&f->lock);
    bool work = next_ahead(f) != NULL;
    pthread_mutex_unlock(&f->lock);
    if (!work)
        return;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    f->ahead_running = pthread_create(&f->ahead, NULL, inflate_ahead, f) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static struct dwarf_file *open_file(const char *path, bool locations, bool ahead, Dwarf_Debug *dbg, char *err,
                                    size_t errlen)
{
    struct dwarf_file *f = calloc(1, sizeof *f);
    if (!f) {
        snprintf(err, errlen, "out of memory reading %s", path);
        return NULL;
    }
    f->locations = locations;
    pthread_mutex_init(&f->lock, NULL);
    pthread_cond_init(&f->settled, NULL);
    if ((f->fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
        snprintf(err, errlen, "cannot open %s", path);
        dwarf_walk_close(f);
        return NULL;
    }
    elf_version(EV_CURRENT);
    GElf_Ehdr eh;
    f->elf = elf_begin(f->fd, ELF_C_READ_MMAP, NULL);
    if (!f->elf || elf_kind(f->elf) != ELF_K_ELF || !gelf_getehdr(f->elf, &eh) ||
        eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
        elf_getshdrnum(f->elf, &f->sections) != 0 || elf_getshdrstrndx(f->elf, &f->names) != 0) {
        snprintf(err, errlen, "%s is not a 64-bit little-endian ELF file", path);
        dwarf_walk_close(f);
        return NULL;
    }
    if (!list_compressed(f, ahead)) {
        snprintf(err, errlen, "out of memory reading %s", path);
        dwarf_walk_close(f);
        return NULL;
    }
    start_ahead(f);
    f->interface = (Dwarf_Obj_Access_Interface){ .object = f, .methods = &methods };
    Dwarf_Error error = NULL;
    /* libdwarf's table of every allocation costs a sixth of the time of a
     * lookup; every reader here deallocates what it takes. */
    dwarf_set_de_alloc_flag(0);
    int rc = dwarf_object_init_b(&f->interface, NULL, NULL, DW_GROUPNUMBER_ANY, &f->dbg, &error);
    if (rc != DW_DLV_OK) {
        snprintf(err, errlen, "%s has no DWARF debug information", path);
        if (rc == DW_DLV_ERROR)
            dwarf_dealloc(NULL, error, DW_DLA_ERROR);
        f->dbg = NULL;
        dwarf_walk_close(f);
        return NULL;
    }
    *dbg = f->dbg;
    return f;
}

struct dwarf_file *dwarf_walk_open(const char *path, Dwarf_Debug *dbg, char *err, size_t errlen)
{
    return open_file(path, false, false, dbg, err, errlen);
}

struct dwarf_file *dwarf_walk_open_ahead(const char *path, Dwarf_Debug *dbg, char *err, size_t errlen)
{
    return open_file(path, false, true, dbg, err, errlen);
}

struct dwarf_file *dwarf_walk_open_locations(const char *path, Dwarf_Debug *dbg, char *err, size_t errlen)
{
    return open_file(path, true, false, dbg, err, errlen);
}

void dwarf_walk_close(struct dwarf_file *f)
{
    if (!f)
        return;
    if (f->ahead_running) {   /* it reads libelf's mapping: ended first */
        pthread_mutex_lock(&f->lock);
        f->stop = true;
        pthread_mutex_unlock(&f->lock);
        pthread_join(f->ahead, NULL);
    }
    Dwarf_Error error = NULL;
    if (f->dbg)
        dwarf_object_finish(f->dbg, &error);
    if (f->elf)
        elf_end(f->elf);
    if (f->fd >= 0)
        close(f->fd);
    for (size_t i = 0; i < f->compressed_count; i++) {
        stream_end(&f->compressed[i]);
        if (f->compressed[i].state == READY)
            section_free(f->compressed[i].data, f->compressed[i].mapped);
    }
    free(f->compressed);
    pthread_cond_destroy(&f->settled);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

bool dwarf_walk_next_cu(Dwarf_Debug dbg, Dwarf_Die *cu, unsigned *version)
{
    Dwarf_Unsigned length, type_offset, next;
    Dwarf_Half cu_version, address_size, offset_size, extension_size, cu_type;
    Dwarf_Off abbrev;
    Dwarf_Sig8 signature;
    Dwarf_Error error = NULL;
    for (;;) {
        if (dwarf_next_cu_header_d(dbg, 1, &length, &cu_version, &abbrev, &address_size, &offset_size,
                                   &extension_size, &signature, &type_offset, &next, &cu_type, &error) != DW_DLV_OK)
            return false;
        if (dwarf_siblingof_b(dbg, NULL, 1, cu, &error) == DW_DLV_OK) {
            if (version)
                *version = cu_version;
            return true;
        }
    }
}

uint64_t dwarf_walk_cu_base(Dwarf_Die cu)
{
    Dwarf_Addr low;
    Dwarf_Error error = NULL;
    return dwarf_lowpc(cu, &low, &error) == DW_DLV_OK ? low : 0;
}

static size_t report(dwarf_range_fn *each, void *ctx, uint64_t start, uint64_t end)
{
    if (end <= start)
        return 0;
    each(ctx, start, end);
    return 1;
}

/* DWARF 5: a .debug_rnglists list (libdwarf applies the base itself). */
static size_t rnglist_ranges(Dwarf_Attribute attr, Dwarf_Half form, dwarf_range_fn *each, void *ctx)
{
    Dwarf_Error error = NULL;
    Dwarf_Unsigned value, count, global;
    Dwarf_Rnglists_Head head;
    if ((form == DW_FORM_rnglistx ? dwarf_formudata(attr, &value, &error)
                                  : dwarf_global_formref(attr, &value, &error)) != DW_DLV_OK ||
        dwarf_rnglists_get_rle_head(attr, form, value, &head, &count, &global, &error) != DW_DLV_OK)
        return 0;
    size_t n = 0;
    for (Dwarf_Unsigned i = 0; i < count; i++) {
        unsigned length, code;
        Dwarf_Unsigned raw1, raw2, start, end;
        Dwarf_Bool unavailable = 0;
        if (dwarf_get_rnglists_entry_fields_a(head, i, &length, &code, &raw1, &raw2, &unavailable, &start, &end,
                                              &error) != DW_DLV_OK || unavailable)
            continue;
        if (code == DW_RLE_offset_pair || code == DW_RLE_start_end || code == DW_RLE_start_length ||
            code == DW_RLE_startx_endx || code == DW_RLE_startx_length)
            n += report(each, ctx, start, end);
    }
    dwarf_dealloc_rnglists_head(head);
    return n;
}

/* DWARF 2-4: a .debug_ranges list, offsets from the CU's base unless an
 * entry selects another base. */
static size_t debug_ranges(Dwarf_Debug dbg, Dwarf_Die die, Dwarf_Attribute attr, uint64_t base,
                           dwarf_range_fn *each, void *ctx)
{
    Dwarf_Error error = NULL;
    Dwarf_Off offset, real;
    Dwarf_Unsigned udata, bytes;
    Dwarf_Ranges *ranges;
    Dwarf_Signed count;
    if (dwarf_global_formref(attr, &offset, &error) != DW_DLV_OK) {
        if (dwarf_formudata(attr, &udata, &error) != DW_DLV_OK)
            return 0;
        offset = udata;
    }
    if (dwarf_get_ranges_b(dbg, offset, die, &real, &ranges, &count, &bytes, &error) != DW_DLV_OK)
        return 0;
    size_t n = 0;
    for (Dwarf_Signed i = 0; i < count; i++) {
        if (ranges[i].dwr_type == DW_RANGES_END)
            break;
        if (ranges[i].dwr_type == DW_RANGES_ADDRESS_SELECTION)
            base = ranges[i].dwr_addr2;
        else
            n += report(each, ctx, base + ranges[i].dwr_addr1, base + ranges[i].dwr_addr2);
    }
    dwarf_ranges_dealloc(dbg, ranges, count);
    return n;
}

size_t dwarf_walk_ranges(Dwarf_Debug dbg, Dwarf_Die die, uint64_t cu_base, dwarf_range_fn *each, void *ctx)
{
    Dwarf_Error error = NULL;
    Dwarf_Addr low, high;
    Dwarf_Half form;
    enum Dwarf_Form_Class class;
    if (dwarf_lowpc(die, &low, &error) == DW_DLV_OK &&
        dwarf_highpc_b(die, &high, &form, &class, &error) == DW_DLV_OK)
        return report(each, ctx, low, class == DW_FORM_CLASS_CONSTANT ? low + high : high);
    Dwarf_Attribute attr;
    if (dwarf_attr(die, DW_AT_ranges, &attr, &error) != DW_DLV_OK)
        return 0;
    Dwarf_Half version = 0, offset_size;
    size_t n = 0;
    if (dwarf_whatform(attr, &form, &error) == DW_DLV_OK &&
        dwarf_get_version_of_die(die, &version, &offset_size) == DW_DLV_OK)
        n = form == DW_FORM_rnglistx || version >= 5 ? rnglist_ranges(attr, form, each, ctx)
                                                      : debug_ranges(dbg, die, attr, cu_base, each, ctx);
    dwarf_dealloc(dbg, attr, DW_DLA_ATTR);
    return n;
}

bool dwarf_walk_ref_in(struct dwarf_file *f, Dwarf_Debug dbg, Dwarf_Die die, Dwarf_Half attr_name,
                       Dwarf_Die *target)
{
    Dwarf_Attribute attr;
    Dwarf_Error error = NULL;
    Dwarf_Off offset;
    if (dwarf_attr(die, attr_name, &attr, &error) != DW_DLV_OK)
        return false;
    bool ok = dwarf_global_formref(attr, &offset, &error) == DW_DLV_OK && (!f || dwarf_walk_need_offset(f, offset)) &&
              dwarf_offdie_b(dbg, offset, 1, target, &error) == DW_DLV_OK;
    dwarf_dealloc(dbg, attr, DW_DLA_ATTR);
    return ok;
}

bool dwarf_walk_ref(Dwarf_Debug dbg, Dwarf_Die die, Dwarf_Half attr_name, Dwarf_Die *target)
{
    return dwarf_walk_ref_in(NULL, dbg, die, attr_name, target);
}

static bool named_within(Dwarf_Debug dbg, Dwarf_Die die, const char *name, int hops)
{
    char *own = NULL;
    Dwarf_Error error = NULL;
    if (dwarf_diename(die, &own, &error) == DW_DLV_OK)
        return strcmp(own, name) == 0;
    if (hops > 2)
        return false;
    static const Dwarf_Half refs[] = { DW_AT_abstract_origin, DW_AT_specification };
    for (size_t i = 0; i < 2; i++) {
        Dwarf_Die target;
        if (dwarf_walk_ref(dbg, die, refs[i], &target)) {
            bool found = named_within(dbg, target, name, hops + 1);
            dwarf_dealloc(dbg, target, DW_DLA_DIE);
            if (found)
                return true;
        }
    }
    return false;
}

bool dwarf_walk_named(Dwarf_Debug dbg, Dwarf_Die die, const char *name)
{
    return named_within(dbg, die, name, 0);
}

static bool has_code(Dwarf_Die die)
{
    Dwarf_Error error = NULL;
    Dwarf_Bool has = 0;
    return (dwarf_hasattr(die, DW_AT_low_pc, &has, &error) == DW_DLV_OK && has) ||
           (dwarf_hasattr(die, DW_AT_ranges, &has, &error) == DW_DLV_OK && has);
}

#define MAX_DEPTH 64

struct copies {
    Dwarf_Debug dbg;
    const char *name;
    dwarf_copy_fn *each;
    void *ctx;
    bool stop;
};

/* `function`: the concrete subprogram the DIEs below are code of. */
static void walk_copies(struct copies *c, Dwarf_Die parent, Dwarf_Die function, int depth)
{
    Dwarf_Die child;
    Dwarf_Error error = NULL;
    if (depth > MAX_DEPTH || c->stop || dwarf_child(parent, &child, &error) != DW_DLV_OK)
        return;
    for (;;) {
        Dwarf_Half tag;
        Dwarf_Die inner = function;
        if (dwarf_tag(child, &tag, &error) == DW_DLV_OK &&
            (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) && has_code(child)) {
            if (tag == DW_TAG_subprogram)
                inner = child;
            if (dwarf_walk_named(c->dbg, child, c->name) &&
                c->each(c->ctx, child, inner, tag == DW_TAG_inlined_subroutine))
                c->stop = true;
        }
        walk_copies(c, child, inner, depth + 1);
        Dwarf_Die next;
        int rc = dwarf_siblingof_b(c->dbg, child, 1, &next, &error);
        dwarf_dealloc(c->dbg, child, DW_DLA_DIE);
        if (rc != DW_DLV_OK || c->stop)
            return;
        child = next;
    }
}

bool dwarf_walk_copies(Dwarf_Debug dbg, Dwarf_Die cu, const char *name, dwarf_copy_fn *each, void *ctx)
{
    struct copies c = { dbg, name, each, ctx, false };
    walk_copies(&c, cu, cu, 0);
    return c.stop;
}
