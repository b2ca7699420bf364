/* memprof core CORE [PROGRAM]: the report of a process that is gone, read
 * from its ELF core file alone (core_image.h): the Ruby objects by
 * file:line:Class when the process ran Ruby (core_ruby.c), else or with
 * --heap the C heap by call site (core_heap.c, named by the same code as
 * `memprof run --heap`), who allocated one address (--where), the thread
 * registry or the runtime's state (core_threads.c). */
#include "../commands.h"
#include "../cli.h"
#include "core_image.h"
#include "../input.h"
#include "../output.h"
#include "../format/pprof.h"
#include "objfile/sysroot.h"
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The C heap report, named. */
static bool heap_report(struct core_image *c, FILE *out, const struct core_report_options *opt)
{
    char *raw = NULL;
    size_t raw_len = 0;
    FILE *raw_out = open_memstream(&raw, &raw_len);
    bool ok = raw_out && core_heap_raw(c, raw_out);
    if (raw_out)
        fclose(raw_out);
    if (ok) {
        FILE *in = fmemopen(raw, raw_len, "r");
        struct heap_report_options heap = { .top = opt->top, .filter = opt->filter, .when = "in the core of" };
        ok = (in && heap_report_symbolize(in, out, (pid_t)c->notes.pid, &heap) == 0) ||
             core_fail(c, "cannot write the report of %s", c->path);
        if (in)
            fclose(in);
    }
    free(raw);
    return ok || core_fail(c, "out of memory");
}

/* What `write` makes of the core, read back from memory. */
static FILE *core_text(struct core_image *c, bool (*write)(struct core_image *, FILE *), char **text)
{
    size_t len = 0;
    *text = NULL;
    FILE *f = open_memstream(text, &len);
    bool ok = f && write(c, f);
    if (f)
        fclose(f);
    return ok ? fmemopen(*text, len, "r") : NULL;
}

static bool ruby_table(struct core_image *c, FILE *out)
{
    return core_ruby_report(c, out, &(struct core_ruby_options){ 0, NULL });
}

/* The report as pprof's profile.proto: the Ruby table's (when the report
 * is Ruby's), else the C heap's. */
static bool proto_of(struct core_image *c, FILE *out, bool ruby)
{
    char *text;
    FILE *in = core_text(c, ruby ? ruby_table : core_heap_raw, &text);
    char why[256] = "out of memory";
    struct stacks s = { 0 };
    bool ok = in && (ruby ? stacks_read(in, c->path, &s) == 0 && stacks_proto(&s, out, why, sizeof why) == 0
                          : heap_report_proto(in, out, why, sizeof why) == 0);
    stacks_free(&s);
    if (in)
        fclose(in);
    free(text);
    return ok || c->why[0] || core_fail(c, "--pprof-proto: %s", why);
}

static bool ruby_proto(struct core_image *c, FILE *out)
{
    return proto_of(c, out, true);
}

static bool heap_proto(struct core_image *c, FILE *out)
{
    return proto_of(c, out, false);
}

/* The object recorded at the address: a Ruby object, else the C heap
 * block holding it (its sites named as memprof name-sites does). */
static bool where(struct core_image *c, FILE *out, uint64_t addr)
{
    bool found = false;
    if (core_has_ruby(c) && !core_ruby_where(c, addr, out, &found))
        return false;
    if (!found) {
        char *raw = NULL;
        size_t len = 0;
        FILE *raw_out = open_memstream(&raw, &len);
        bool ok = raw_out && core_heap_where(c, addr, raw_out, &found);
        if (raw_out)
            fclose(raw_out);
        FILE *in = ok && found ? fmemopen(raw, len, "r") : NULL;
        if (in) {
            name_sites(in, out);
            fclose(in);
        }
        free(raw);
        if (!ok)
            return c->why[0] ? false : core_fail(c, "out of memory");
        if (found && !in)
            return core_fail(c, "out of memory");
    }
    if (!found)
        fprintf(out, "memprof: no allocation recorded at 0x%" PRIx64 "\n", addr);
    return true;
}

/* A file whole or not at all (0600, never through a symbolic link). */
static bool write_file(struct core_image *c, const char *path, bool (*write)(struct core_image *, FILE *),
                       const char *what)
{
    struct output o;
    if (output_open(&o, path) != 0)
        return core_fail(c, "%scannot write %s", what, path);
    bool ok = write(c, o.fp);
    return output_close(&o, !ok) == 0 && ok;
}

int core_report(const char *path, FILE *out, const struct core_report_options *opt, char *why, size_t why_size)
{
    struct core_image c;
    bool ok = core_open(&c, path, opt->program);
    if (ok) {
        enum core_report_kind kind = opt->kind;
        if (kind == CORE_REPORT_AUTO)
            kind = core_has_ruby(&c) ? CORE_REPORT_RUBY : CORE_REPORT_HEAP;
        struct core_ruby_options ruby = { opt->top, opt->filter };
        if (kind == CORE_REPORT_WHERE)
            ok = where(&c, out, opt->where);
        else if (kind == CORE_REPORT_THREADS)
            ok = core_threads_report(&c, out);
        else if (kind == CORE_REPORT_STATUS)
            ok = core_status(&c, out);
        else if (kind == CORE_REPORT_HEAP)
            ok = heap_report(&c, out, opt);
        else if (!core_has_ruby(&c))
            ok = core_fail(&c, "%s: pid %ld ran no Ruby VM memprof traced (memprof core --heap reads its C heap)",
                           path, c.notes.pid);
        else
            ok = core_ruby_report(&c, out, &ruby);
        if (ok && opt->dump)
            ok = write_file(&c, opt->dump, core_ruby_dump, "--dump: ");
        if (ok && opt->pprof)
            ok = write_file(&c, opt->pprof, core_heap_pprof, "--pprof: ");
        if (ok && opt->proto)
            ok = write_file(&c, opt->proto,
                            kind == CORE_REPORT_RUBY || (kind != CORE_REPORT_HEAP && core_has_ruby(&c)) ? ruby_proto
                                                                                                         : heap_proto,
                            "--pprof-proto: ");
    }
    if (!ok)
        snprintf(why, why_size, "memprof: %s", c.why[0] ? c.why : "out of memory");
    core_close(&c);
    return ok ? 0 : 1;
}

/* The core GDB reads, and the program's file it has, from `info target` on
 * stdin ("Local core dump file:" or "Local exec file:", then a tab and
 * `PATH', file type ..."); `program` "" when it has none. All of stdin is
 * read: GDB writing the rest into a closed pipe would say so. */
static bool core_of_gdb_target(char *path, char *program, size_t size)
{
    char line[PATH_MAX + 64];
    char *next = NULL;
    path[0] = program[0] = '\0';
    FILE *in = input_stdin();
    while (fgets(line, sizeof line, in)) {
        char *start = strchr(line, '`'), *end = start ? strstr(start, "', file type") : NULL;
        if (next && !next[0] && end)
            snprintf(next, size, "%.*s", (int)(end - start - 1), start + 1);
        next = strncmp(line, "Local core dump file:", 21) == 0 ? path
               : strncmp(line, "Local exec file:", 16) == 0 ? program : NULL;
    }
    return path[0] != '\0';
}

enum {
    CORE_RUBY, CORE_HEAP, CORE_THREADS, CORE_STATUS, CORE_TOP, CORE_FILTER, CORE_DUMP, CORE_PPROF, CORE_PROTO,
    CORE_WHERE, CORE_BYTES, CORE_GDB_TARGET, CORE_SYSROOT,
};
static const struct cli_option core_options[] = {
    [CORE_RUBY] = CLI_FLAG("ruby", 0, "the live Ruby objects by file:line:Class (the default when it ran Ruby)"),
    [CORE_HEAP] = CLI_FLAG("heap", 0, "the live C heap blocks by call site"),
    [CORE_THREADS] = CLI_FLAG("threads", 0, "the threads memprof's registry knew, with their allocations"),
    [CORE_STATUS] = CLI_FLAG("status", 0, "what the runtime was doing: its settings and tables"),
    [CORE_TOP] = CLI_NUMBER("top", 0, "N", "only the first N rows (0: all)", 0, LONG_MAX),
    [CORE_FILTER] = CLI_VALUE("filter", 0, "TEXT", "only rows whose names contain TEXT"),
    [CORE_DUMP] = CLI_VALUE("dump", 0, "FILE", "the live Ruby objects as JSON lines (ObjectSpace.dump_all's schema)"),
    [CORE_PPROF] = CLI_VALUE("pprof", 0, "FILE", "the C heap as a google-pprof heap profile"),
    [CORE_PROTO] = CLI_VALUE("pprof-proto", 0, "FILE", "the report as pprof's profile.proto, gzipped"),
    [CORE_WHERE] = CLI_VALUE("where", 0, "ADDRESS", "the live block or object at ADDRESS, and where it was made"),
    [CORE_BYTES] = CLI_FLAG("bytes", 0, "refused: a Ruby object's bytes need the VM, and no code runs in a core"),
    [CORE_GDB_TARGET] = CLI_FLAG("gdb-target", 0, "the core GDB reads (`info target` on stdin): GDB's memprof-info"),
    [CORE_SYSROOT] = CLI_VALUE("sysroot", 0, "DIR", "look for the core's files under DIR first (another machine's\n"
                                                   "files copied there, as gdb's set sysroot; MEMPROF_SYSROOT)"),
    { 0 },
};
static const struct cli_command core_command = {
    .name = "core", .operands = "CORE [PROGRAM]", .min_operands = 0, .max_operands = 2,
    .summary = "The report of a process that is gone, read from its core file (gcore, a crash) alone.\n"
               "PROGRAM: the program's file, when the core's own record of it is not enough.",
    .options = core_options,
};

int cmd_core(int argc, char **argv)
{
    struct core_report_options opt = { .kind = CORE_REPORT_AUTO };
    const char *path = NULL;
    char gdb_core[PATH_MAX], gdb_program[PATH_MAX];
    struct cli_args a;
    int o;
    char *end;
    cli_begin(&a, &core_command, argc, argv);
    while ((o = cli_next(&a)) >= 0) {
        switch (o) {
        case CORE_RUBY: opt.kind = CORE_REPORT_RUBY; break;
        case CORE_HEAP: opt.kind = CORE_REPORT_HEAP; break;
        case CORE_THREADS: opt.kind = CORE_REPORT_THREADS; break;
        case CORE_STATUS: opt.kind = CORE_REPORT_STATUS; break;
        case CORE_TOP: opt.top = (unsigned long)a.number; break;
        case CORE_FILTER: opt.filter = a.value; break;
        case CORE_DUMP: opt.dump = a.value; break;
        case CORE_PPROF: opt.pprof = a.value; break;
        case CORE_PROTO: opt.proto = a.value; break;
        case CORE_WHERE:
            opt.kind = CORE_REPORT_WHERE;
            opt.where = strtoull(a.value, &end, 0);
            if (*end)
                return cli_fail(&core_command, "--where: '%s' is not an address", a.value);
            break;
        case CORE_BYTES:
            return cli_fail(&core_command, "--bytes: a Ruby object's bytes are the VM's to measure "
                                           "(rb_obj_memsize_of), and no code runs in a core; the C heap "
                                           "report (--heap) has bytes");
        case CORE_GDB_TARGET:
            if (!core_of_gdb_target(gdb_core, gdb_program, sizeof gdb_core)) {
                fputs("memprof: GDB reads no core file\n", stderr);
                return 1;
            }
            path = gdb_core;
            break;
        case CORE_SYSROOT: sysroot_set(a.value); break;
        }
    }
    if (o != CLI_END)
        return cli_status(o);
    if (!path && a.operand_count == 0)
        return cli_fail(&core_command, "no core file given (usage: memprof core [OPTIONS] CORE [PROGRAM])");
    if (!path)
        path = a.operands[0];
    if (a.operand_count > (path == gdb_core ? 0 : 1))
        opt.program = a.operands[a.operand_count - 1];
    else if (path == gdb_core && gdb_program[0])
        opt.program = gdb_program;   /* the file GDB debugs the core with */
    char why[PATH_MAX + 160];
    int rc = core_report(path, stdout, &opt, why, sizeof why);
    if (rc)
        fprintf(stderr, "%s\n", why);
    return rc;
}
