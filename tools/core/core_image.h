/* A process that is gone, as its ELF core file shows it: its memory (the
 * PT_LOAD segments), the files it had mapped (the NT_FILE note, else the
 * dynamic linker's list: core_loader.c), and the
 * runtime's memprof_tables descriptor found among them and checked. What
 * memprof core, GDB on a core and the crash helper read from. Everything
 * read is checked before it is used: a damaged or foreign layout is one
 * line in `why`, never a guess. */
#ifndef MEMPROF_TOOLS_CORE_IMAGE_H
#define MEMPROF_TOOLS_CORE_IMAGE_H
#include "core_notes.h"
#include "memprof_debugger.h"
#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define CORE_MAX_POOL (UINT64_C(1) << 28)    /* bytes of strings in a pool */
#define CORE_MAX_TUPLES (UINT64_C(1) << 26)  /* tuples in an intern table */

struct core_segment {
    uint64_t vaddr, filesz, offset;
};

struct core_image {
    const char *path;
    int fd;
    Elf *elf;
    unsigned machine;               /* EM_X86_64 or EM_AARCH64 */
    struct core_segment *segments;  /* the memory the core holds */
    size_t segment_count;
    struct core_region { uint64_t vaddr, memsz; uint32_t flags; } *regions;  /* every PT_LOAD: its permissions */
    size_t region_count;
    struct core_notes notes;      /* the pid and the files mapped */
    uint64_t *bias;               /* [mapping]: a file's load bias, read once */
    uint8_t *bias_state;          /* [mapping]: 0 not read yet, 1 read, 2 unreadable */
    char **loader_path;           /* [mapping]: the name the dynamic linker used, or NULL */
    struct memprof_tables tables; /* the runtime's descriptor, checked */
    pid_t pid;                    /* a running process read in place (core_open_process), or 0 */
    int process_errno;            /* why its memory could not be read (EPERM, ESRCH), or 0 */
    char process_name[32];        /* "pid N": its `path` in messages */
    char why[PATH_MAX + 128];     /* the first problem */
};

/* Open the core at `path` and find the runtime's tables in it; false with
 * `why` set. core_close in either case. `program`: the program's file, or
 * NULL (the core's own record of it). */
bool core_open(struct core_image *c, const char *path, const char *program);
/* A file the core names, opened read-only: under the sysroot first
 * (objfile/sysroot.h: an arm64 core read on x86-64). */
int core_open_file(const char *path);
/* The files a core without NT_FILE had mapped (qemu-user's cores, say),
 * from the dynamic linker's own list as GDB reads it: the program found
 * through NT_AUXV, its DT_DEBUG's r_debug, each link_map's name and load
 * bias, each file's PT_LOAD headers on disk (core_loader.c). */
bool core_loader_files(struct core_image *c, const char *program);
void core_close(struct core_image *c);
/* A running process read the same way, without stopping it: its memory with
 * process_vm_readv (the same permission as ptrace's), its files from
 * /proc/PID/maps. What is read may change meanwhile: a reader checks the
 * tables' generation before and after (memprof top). */
bool core_open_process(struct core_image *c, pid_t pid);
/* Keep the first problem in `why`; false. */
bool core_fail(struct core_image *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* `len` bytes of the process's memory at `addr`; false (and `why`) when the
 * core does not hold them. */
bool core_read(struct core_image *c, uint64_t addr, void *out, size_t len, const char *what);
bool core_read_u64(struct core_image *c, uint64_t addr, uint64_t *v, const char *what);
/* The same where memory may rightly be missing (the program's own objects,
 * not memprof's tables): false, and no problem recorded. */
bool core_peek(struct core_image *c, uint64_t addr, void *out, size_t len);
/* Pieces read in their order, in one system call from a running process
 * (process_vm_readv reads its iovecs in turn): what a reader that checks
 * a stamp before and after needs, at the cost of one read. False when any
 * piece could not be read; no problem recorded. */
struct core_piece {
    uint64_t addr;
    void *out;
    size_t len;
    const char *what;   /* for a reader's message (core_read) */
};
bool core_peek_pieces(struct core_image *c, const struct core_piece *pieces, size_t count);
/* A NUL-terminated string of at most `size` - 1 bytes at `addr`. */
bool core_read_string(struct core_image *c, uint64_t addr, char *out, size_t size, const char *what);
/* The file mapped at code address `pc` (a return address: pc - 1 is in the
 * call) and its load bias: false when none is, or it cannot be read. */
bool core_object(struct core_image *c, uint64_t pc, const char **path, uint64_t *bias);

/* A u64 field of a structure copied out of the core. */
static inline uint64_t core_field_u64(const unsigned char *base, uint32_t offset)
{
    uint64_t v;
    __builtin_memcpy(&v, base + offset, 8);
    return v;
}
/* A string pool (store/strings.h), given its bytes: its strings, one
 * allocation NUL-terminated as a whole. */
bool core_read_pool(struct core_image *c, const unsigned char *pool, char **out, uint64_t *len, const char *what);
/* An intern table (store/intern.h), given its bytes: its tuples. */
struct core_pair { uint64_t a, b; };
bool core_read_tuples(struct core_image *c, const unsigned char *table, struct core_pair **out, uint64_t *count,
                      const char *what);

/* A site table (store/sites.h), given its bytes: file names and frames
 * (file offset << 32 | line, caller site or all ones), every reference
 * checked to point inside. */
#define CORE_SITE_NONE UINT32_MAX
struct core_sites {
    char *files;
    uint64_t files_len;
    struct core_pair *frames;
    uint64_t count;
};
bool core_read_sites(struct core_image *c, const unsigned char *table, struct core_sites *s, const char *what);
void core_sites_free(struct core_sites *s);
static inline const char *core_site_file(const struct core_sites *s, uint32_t site)
{
    return s->files + (s->frames[site].a >> 32);
}
static inline uint32_t core_site_line(const struct core_sites *s, uint32_t site)
{
    return (uint32_t)s->frames[site].a;
}
static inline uint32_t core_site_caller(const struct core_sites *s, uint32_t site)
{
    return (uint32_t)s->frames[site].b;
}

/* The files mapped, as /proc/PID/maps lines (permissions from the core's
 * PT_LOAD headers): google-pprof's MAPPED_LIBRARIES. */
void core_write_maps(struct core_image *c, FILE *out);

/* The tables as the runtime writes its raw C heap report (core_heap.c), for
 * heap_report_symbolize. */
bool core_heap_raw(struct core_image *c, FILE *out);
/* The live C heap block holding `addr`: its size, start, thread, site,
 * callers and Ruby line, raw (sites as "0xPC object+0xOFFSET"); or *found
 * false. */
/* Each heap thread: its tid, whether it exited, what it allocated (blocks
 * and bytes); and how many blocks live. */
struct core_heap_thread {
    int32_t tid;
    bool exited;
    uint64_t count, bytes;
};
bool core_heap_threads(struct core_image *c, struct core_heap_thread **out, size_t *n, uint64_t *live_blocks);
/* google-pprof's heap profile of the C heap (the runtime's --pprof). */
bool core_heap_pprof(struct core_image *c, FILE *out);
bool core_heap_where(struct core_image *c, uint64_t addr, FILE *out, bool *found);
/* The thread registry, as memprof-threads writes it, and what
 * memprof-status can say from a core (core_threads.c). */
bool core_threads_report(struct core_image *c, FILE *out);
bool core_status(struct core_image *c, FILE *out);

/* The Ruby tracer's tables (core_ruby.c). */
struct core_ruby_options {
    unsigned long top;      /* 0: every row */
    const char *filter;     /* NULL, or rows whose text contains it */
};
/* Whether the process had a Ruby VM the runtime traced. */
bool core_has_ruby(struct core_image *c);
/* The live objects by file:line:Class, as the runtime's report writes them. */
bool core_ruby_report(struct core_image *c, FILE *out, const struct core_ruby_options *opt);
/* The live objects as JSON lines (ObjectSpace.dump_all's schema, the
 * runtime's --dump). */
bool core_ruby_dump(struct core_image *c, FILE *out);
/* The objects made at each origin since recording started: "COUNT
 * file:line:Class" and its "  from" lines, the site written as the report
 * writes it (hidden and internal objects left out). */
bool core_ruby_allocations(struct core_image *c, FILE *out);
/* "file:line:Class" and the callers of the object recorded at `addr`, or
 * *found false. */
bool core_ruby_where(struct core_image *c, uint64_t addr, FILE *out, bool *found);
#endif
