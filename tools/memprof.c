/* memprof: the command-line companion.
 *
 *   memprof run [-o FILE] [OPTIONS] [--] CMD [ARGS...]
 *
 * `run` execs CMD with the runtime preloaded, so CMD's exit status and signals
 * are its own; the runtime writes the report when CMD exits. */
#include "commands.h"
#include "cli.h"
#include "runtime/report_signals.h"
#include "output.h"
#include "format/pprof.h"
#include "report/ruby_groups.h"
#include "scratch.h"
#include "trace/heap/heap.h"
#include "objfile/symbolizer.h"
#include "util/atomic_file.h"
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <dirent.h>
#include <time.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum {
    EXIT_CANNOT_EXEC = 126,  /* as the shell: found but not executable */
    EXIT_NOT_FOUND = 127,    /* as the shell: no such command */
};

static const struct cli_command run_command;

static void usage(FILE *f)
{
    fputs("usage: memprof run [-o FILE] [OPTIONS] [--] COMMAND [ARGS...]\n"
          "       memprof attach PID [--seconds N] [-o FILE] [--ruby|--heap|--all]\n"
          "       memprof threads -p PID\n"
          "       memprof top [--interval S] [--batch] [--sort KEY] [--filter TEXT] PID\n"
          "       memprof collapse [--count|--bytes] [--format collapsed|speedscope] [-o FILE] REPORT\n"
          "       memprof flamegraph [--count|--bytes] [--title TEXT] [-o FILE.svg] REPORT\n"
          "       memprof diff [-o FILE] BEFORE AFTER\n"
          "       memprof merge [-o FILE] REPORT...\n"
          "       memprof proto [-o FILE.pb.gz] REPORT\n"
          "       memprof timeline [-o FILE.svg|FILE.csv] TIMELINE\n"
          "       memprof groups [--group G]... [--strings N] [--top N] [TABLE|-]\n"
          "       memprof symbols [--all] [--arch ARCH] FILE\n"
          "       memprof imports [--arch ARCH] [--format text|tsv|json] FILE\n"
          "       memprof symbolize FILE ADDRESS...\n"
          "       memprof heap-table [--top N] [--filter TEXT] [--sysroot DIR] [FILE|-]\n"
          "       memprof name-sites < TEXT\n"
          "       memprof safe-point [--thread N] < BACKTRACES\n"
          "       memprof keep --dir DIR NAME < TEXT\n"
          "       memprof core [--ruby|--heap] [--top N] [--filter TEXT] [--sysroot DIR] CORE [PROGRAM]\n"
          "       memprof crash-helper --dir DIR [--compress] [--max-core-size BYTES] PID SIGNAL [EXE] < CORE\n"
          "       memprof --help | --version\n"
          "\n"
          "Commands:\n"
          "  run      run COMMAND with the memprof runtime preloaded; when it exits,\n"
          "           print the live Ruby objects by file:line:Class (to stderr, or to FILE)\n"
          "  attach   profile the running process PID: load the runtime into it with GDB,\n"
          "           record for N seconds (or until Ctrl-C), print the report (Ruby\n"
          "           objects, or with --heap the C heap; then its threads), and remove\n"
          "           every hook again: the process runs on as it was\n"
          "  top      the memory of the running process PID, refreshed every second without\n"
          "           stopping it: its RSS, memprof's live bytes and trend, the top sites\n"
          "           of the Ruby table and the C heap with their growth (keys: s, /, q)\n"
          "  threads  watch the threads of PID come and go (libthread_db, no GDB): one\n"
          "           line per thread created or exited, until it ends or Ctrl-C\n"
          "\n"
          "  collapse    a report, dump (JSON lines) or heap report as collapsed stacks\n"
          "              ('outer;...;inner WEIGHT' lines, for flame graph tools): bytes\n"
          "              when the input has them, else objects; --format speedscope:\n"
          "              speedscope's JSON file format instead (unit bytes)\n"
          "  flamegraph  the same as an SVG flame graph, drawn by memprof\n"
          "  diff        per-site growth from BEFORE to AFTER (reports, dumps, profiles or\n"
          "              collapsed stacks of one kind), largest growth first; '-' reads stdin\n"
          "  merge       one table from several reports of one kind (a forking server's\n"
          "              workers, several runs), rows added by site; or profiles into one\n"
          "  proto       a report as pprof's profile.proto, gzipped (go tool pprof, Pyroscope,\n"
          "              Grafana, speedscope): a raw C heap report (MEMPROF_HEAP_OUTPUT's)\n"
          "              named here, with every sample type; a Ruby table or dump\n"
          "  (collapse, flamegraph and diff also read such profiles)\n"
          "  timeline    the runtime's MEMPROF_TIMELINE file as a chart (-o FILE.svg) or\n"
          "              a CSV series (-o FILE.csv, or stdout)\n"
          "  groups      a Ruby table grouped by gem, file, location and class, and the strings\n"
          "              most often retained, as memory_profiler prints them (run --group,\n"
          "              Memprof.report's block)\n"
          "\n"
          "  symbols  list the function symbols of an ELF or Mach-O FILE (from .symtab or\n"
          "           .dynsym, or its separate debug file; LC_SYMTAB), and where they come\n"
          "           from; --all: every symbol, local, external or undefined\n"
          "  imports  each function FILE imports: the slot the dynamic linker fills (GOT,\n"
          "           lazy or non-lazy pointer), the stub that jumps through it (PLT,\n"
          "           __stubs) and the library; --arch: a universal file's slice\n"
          "  symbolize  name file ADDRESSes (hex) of FILE: function+offset and file:line,\n"
          "           with the functions inlined there\n"
          "  heap-table  name a raw C heap report (MEMPROF_HEAP_OUTPUT's; GDB's\n"
          "           memprof-info heap hands the runtime's rows to it) as run --heap does\n"
          "  name-sites  copy text from stdin, each 'ADDRESS OBJECT+OFFSET' in it named\n"
          "           (GDB's memprof-where uses it)\n"
          "  safe-point  read GDB's 'thread apply all bt': is a thread inside malloc or\n"
          "           the dynamic loader? (exit status: its number + 1; GDB's\n"
          "           memprof-safe-point uses it)\n"
          "  core     the C heap report of a process that is gone, from its core file\n"
          "           (gcore, a crash) alone\n"
          "  crash-helper  for the kernel's core_pattern (--install prints the line): keep\n"
          "           a dying process's core (stdin), its backtraces and what it was in\n"
          "           DIR/TIME-PID-NAME/ (mode 0700)\n"
          "  keep     keep stdin as DIR/NAME, DIR a directory of yours with mode 0700,\n"
          "           written whole or not at all (GDB's memprof-snapshot uses it)\n"
          "\n"
          "Options for run:\n",
          f);
    cli_print_options(&run_command, f);
    fputs("\n"
          "Exit status: COMMAND's own; 2 for a usage error or an unusable -o FILE;\n"
          "126 if COMMAND cannot be executed; 127 if it is not found.\n"
          "Environment: see doc/manual.md (MEMPROF_START, MEMPROF_OUTPUT, MEMPROF_SITE, ...).\n",
          f);
}

/* One line on stderr, "memprof: " and the message; the usage status. */
static __attribute__((format(printf, 1, 2))) int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("memprof: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return EXIT_USAGE;
}

bool memprof_in_build_tree(void)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return false;
    self[n] = '\0';
    return strcmp(dirname(self), MEMPROF_BUILD_TOOLS_DIR) == 0;
}

/* The runtime beside this binary in the build tree, else the installed one. */
static const char *runtime_path(void)
{
    const char *env = getenv("MEMPROF_RUNTIME");
    if (env && *env)
        return env;
    return memprof_in_build_tree() ? MEMPROF_BUILD_RUNTIME : MEMPROF_INSTALLED_RUNTIME;
}

/* Check -o FILE before running anything, and make it absolute (CMD may chdir). */
int memprof_resolve_output(const char *spec, char *out, size_t size)
{
    struct stat st;
    if (!*spec)
        return fail("-o needs a file name");
    if (lstat(spec, &st) == 0) {
        if (S_ISLNK(st.st_mode))
            return fail("cannot write the report to %s: it is a symbolic link (refusing to follow it)", spec);
        if (S_ISDIR(st.st_mode))
            return fail("cannot write the report to %s: it is a directory", spec);
        if (!S_ISREG(st.st_mode)) {
            /* A device or FIFO (/dev/null): the runtime writes it in place. */
            char real[PATH_MAX];
            if (!realpath(spec, real) || strlen(real) >= size)
                return fail("cannot write the report to %s: %s", spec, strerror(errno ? errno : ENAMETOOLONG));
            strcpy(out, real);
            return 0;
        }
    }
    char copy[PATH_MAX];
    if (strlen(spec) >= sizeof copy)
        return fail("cannot write the report to %s: %s", spec, strerror(ENAMETOOLONG));
    strcpy(copy, spec);
    const char *base = basename(copy);
    char dir_copy[PATH_MAX];
    strcpy(dir_copy, spec);
    char dir[PATH_MAX];
    if (!realpath(dirname(dir_copy), dir))
        return fail("cannot write the report to %s: %s", spec, strerror(errno));
    /* Create and remove a file there: access(2) says yes to root even on a
     * read-only file system or in /proc. */
    char probe[PATH_MAX + 64];
    snprintf(probe, sizeof probe, "%s/.memprof-probe.%ld", dir, (long)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return fail("cannot write the report to %s: %s", spec, strerror(errno));
    close(fd);
    unlink(probe);
    if ((size_t)snprintf(out, size, "%s/%s", strcmp(dir, "/") ? dir : "", base) >= size)
        return fail("cannot write the report to %s: %s", spec, strerror(ENAMETOOLONG));
    return 0;
}

long memprof_whole_number(const char *s, long min, long max)
{
    char *end;
    errno = 0;
    long n = strtol(s, &end, 10);
    if (!*s || *end || errno || n < min || n > max)
        return -1;
    return n;
}

enum {
    RUN_OUTPUT, RUN_HEAP, RUN_BY_THREAD, RUN_SAMPLE_BYTES, RUN_PPROF, RUN_PPROF_PROTO, RUN_DUMP, RUN_HOOK, RUN_WRAPPER,
    RUN_SITE, RUN_FRAMES, RUN_SAMPLE, RUN_BYTES, RUN_SORT, RUN_TOP, RUN_FILTER, RUN_AT_PEAK, RUN_TIMELINE,
    RUN_PEAK_REPORT, RUN_ON_SIGNAL, RUN_NO_GC, RUN_ALLOCATED, RUN_GROUP, RUN_STRINGS, RUN_SERVE,
    RUN_OPTIONS
};
static const char *const site_words[] = { "nearest", "user", NULL };
static const char *const sort_words[] = { "count", "retained", "bytes", "allocated", NULL };
static const struct cli_option run_options[] = {
    [RUN_OUTPUT] = CLI_VALUE("output", 'o', "FILE", "write the report to FILE (mode 0600, replaced atomically;\n"
                                            "%p in FILE becomes the process id); every other\n"
                                            "profiled process writes its own, FILE.PID.NAME"),
    [RUN_HEAP] = CLI_FLAG("heap", 0, "trace the C heap instead (any program): when COMMAND\n"
                                    "exits, print its live malloc blocks by call site"),
    [RUN_BY_THREAD] = CLI_FLAG("by-thread", 0, "with --heap: a row per call site and allocating thread"),
    [RUN_SAMPLE_BYTES] = CLI_NUMBER("sample-bytes", 0, "N", "with the C heap (implies --heap): record an allocation\n"
                                                   "per N bytes on average, as tcmalloc does; the report\n"
                                                   "scales counts and bytes back and states its error", 1, 1L << 40),
    [RUN_PPROF] = CLI_VALUE("pprof", 0, "FILE", "the C heap also as a google-pprof heap profile (implies\n"
                                        "--heap): google-pprof --text COMMAND FILE"),
    [RUN_PPROF_PROTO] = CLI_VALUE("pprof-proto", 0, "FILE", "the report also as pprof's profile.proto, gzipped: the C\n"
                                                    "heap's sites named, or the live Ruby objects with their\n"
                                                    "class as a label (go tool pprof -top FILE)"),
    [RUN_DUMP] = CLI_VALUE("dump", 0, "FILE", "the live Ruby objects at exit as JSON lines in the schema\n"
                                      "of ObjectSpace.dump_all (heapy reads it)"),
    [RUN_HOOK] = CLI_VALUE("hook", 0, "SPEC", "with the C heap (implies --heap): a custom allocator's\n"
                                      "blocks too, SPEC as for GDB's memprof-hook, e.g.\n"
                                      "'pool_alloc size=arg1 ptr=ret', 'pool_free ptr=arg1',\n"
                                      "'--calls newobj ptr=ret' (repeat for several)"),
    [RUN_WRAPPER] = CLI_VALUE("wrapper", 0, "NAME", "charge what function NAME (or a glob) allocates to its\n"
                                            "caller (MEMPROF_WRAPPERS; repeat for several)"),
    [RUN_SITE] = CLI_WORDS("site", 0, "WHICH", "nearest: each object's nearest Ruby frame (default);\n"
                                       "user: the first frame outside gems and the standard library", site_words),
    [RUN_FRAMES] = CLI_NUMBER("frames", 0, "N", "record N Ruby frames per site (1-64; default 1)", 1, 64),
    [RUN_SAMPLE] = CLI_NUMBER("sample", 0, "N", "record 1 in N allocations; counts are scaled estimates", 1, 1L << 30),
    [RUN_BYTES] = CLI_FLAG("bytes", 0, "add a bytes column (object slot + memory it owns)"),
    [RUN_SORT] = CLI_WORDS("sort", 0, "KEY", "count (or retained): most objects first (default); bytes:\n"
                                             "largest bytes; allocated: most made (and the column)",
                           sort_words),
    [RUN_ALLOCATED] = CLI_FLAG("allocated", 0, "an allocated column: the objects each row's line made since\n"
                                               "recording started, dead or alive"),
    [RUN_GROUP] = CLI_WORDS("group", 0, "G", "after the table, the objects grouped as memory_profiler prints\n"
                                             "them: gem, file, location or class (repeat for several):\n"
                                             "allocated objects, retained memory and objects, each\n"
                                             "largest first (--top rows each)", ruby_group_words),
    [RUN_STRINGS] = CLI_NUMBER("strings", 0, "N", "after the table, the N string values most often retained\n"
                                                  "(cut at 64 bytes, escaped), each with the lines that\n"
                                                  "made them, as memory_profiler's Retained String Report",
                               1, 1L << 20),
    [RUN_NO_GC] = CLI_FLAG("no-gc", 0, "no full GC before the Ruby table: garbage the GC has not\n"
                                       "found yet is counted as live (MEMPROF_NO_GC)"),
    [RUN_TOP] = CLI_NUMBER("top", 0, "N", "only the first N rows", 1, 1L << 40),
    [RUN_FILTER] = CLI_VALUE("filter", 0, "TEXT", "only rows whose file:line:Class contains TEXT"),
    [RUN_AT_PEAK] = CLI_FLAG("at-peak", 0, "the report is the C heap as it was when live bytes were\n"
                                          "highest, within 10% (MEMPROF_PEAK_STEP) + 64 KiB a thread\n"
                                          "(implies --heap)"),
    [RUN_TIMELINE] = CLI_VALUE("timeline", 0, "FILE", "the C heap over time (implies --heap): FILE.svg a stacked\n"
                                              "area chart of the sites that held the most, the peak\n"
                                              "marked; FILE.csv the series (MEMPROF_TIMELINE)"),
    [RUN_PEAK_REPORT] = CLI_VALUE("peak-report", 0, "FILE", "also the C heap as it was at its peak (implies --heap),\n"
                                                    "within 10% (MEMPROF_PEAK_STEP) + 64 KiB a thread; written\n"
                                                    "even if COMMAND is killed (the OOM killer)"),
    [RUN_ON_SIGNAL] = CLI_VALUE("on-signal", 0, "LIST", "if COMMAND gets one of these signals (SIGSEGV,SIGABRT,...),\n"
                                                "write the report first, then let the signal act"),
    [RUN_SERVE] = CLI_VALUE("serve", 0, "ADDR:PORT", "while COMMAND runs, answer HTTP GET /debug/pprof/heap and\n"
                                                    "/debug/pprof/ruby with its profiles (go tool pprof -top\n"
                                                    "http://ADDR:PORT/debug/pprof/ruby); ADDR 127.0.0.1 when\n"
                                                    "left out (MEMPROF_SERVE)"),
    [RUN_OPTIONS] = { 0 },
};
static const struct cli_command run_command = {
    .name = "run", .operands = "[--] COMMAND [ARGS...]", .min_operands = 1, .max_operands = -1,
    .operands_end_options = true,
    .summary = "Run COMMAND with the runtime preloaded; when it exits, print its live Ruby objects by\n"
               "file:line:Class, or with --heap its live C heap blocks by call site.\n"
               "Exit status: COMMAND's own; 2 for a usage error or an unusable -o FILE;\n"
               "126 if COMMAND cannot be executed; 127 if it is not found.",
    .options = run_options,
};
/* The options that are the runtime's environment variables as they are. */
static const char *const run_option_env[] = {
    [RUN_BY_THREAD] = "MEMPROF_HEAP_BY_THREAD", [RUN_SAMPLE_BYTES] = "MEMPROF_SAMPLE_BYTES",
    [RUN_SITE] = "MEMPROF_SITE", [RUN_FRAMES] = "MEMPROF_FRAMES", [RUN_SAMPLE] = "MEMPROF_SAMPLE",
    [RUN_BYTES] = "MEMPROF_BYTES", [RUN_SORT] = "MEMPROF_SORT", [RUN_TOP] = "MEMPROF_TOP",
    [RUN_FILTER] = "MEMPROF_FILTER", [RUN_AT_PEAK] = "MEMPROF_HEAP_AT_PEAK", [RUN_NO_GC] = "MEMPROF_NO_GC",
    [RUN_ALLOCATED] = "MEMPROF_ALLOCATED",
};

/* `value` added to the list in environment variable `env`, after `separator`. */
static int append_env(const char *env, const char *separator, const char *value)
{
    const char *before = getenv(env);
    char *joined = NULL;
    if (asprintf(&joined, "%s%s%s", before && *before ? before : "", before && *before ? separator : "", value) < 0)
        return fail("out of memory");
    setenv(env, joined, 1);
    free(joined);
    return 0;
}

/* --on-signal LIST: 0, or the usage status after a message. */
static int take_signals(const char *value)
{
    char words[256];
    snprintf(words, sizeof words, "%s", value);
    char *save = NULL;
    for (char *w = strtok_r(words, ",", &save); w; w = strtok_r(NULL, ",", &save))
        if (report_signal_index(w) < 0)
            return cli_fail(&run_command,
                            "--on-signal: '%s' is not a signal memprof reports at (SIGSEGV, SIGABRT, SIGBUS, "
                            "SIGILL, SIGFPE, SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1, SIGUSR2, SIGXCPU, "
                            "SIGXFSZ, SIGPIPE, SIGALRM)", w);
    setenv("MEMPROF_ON_SIGNAL", value, 1);
    return 0;
}

/* Where execvp would find `name`: itself when it names a path, else the
 * first executable file of that name in PATH. */
static bool find_in_path(const char *name, char *path, size_t size)
{
    if (strchr(name, '/'))
        return snprintf(path, size, "%s", name) < (int)size;
    const char *dirs = getenv("PATH");
    const char *d = dirs && *dirs ? dirs : "/bin:/usr/bin";
    for (;;) {
        size_t len = strcspn(d, ":");   /* an empty entry is the current directory */
        if (snprintf(path, size, "%.*s/%s", (int)(len ? len : 1), len ? d : ".", name) < (int)size &&
            access(path, X_OK) == 0)
            return true;
        if (!d[len])
            return false;
        d += len + 1;
    }
}

/* COMMAND as a child that owns the report paths (MEMPROF_OWNER_PARENT is
 * memprof: COMMAND's pid is not known before it runs): other profiled
 * processes it starts write their own reports beside them. Spawned, not
 * forked: memprof's pages are neither copied nor written twice. Ctrl-C
 * goes to COMMAND from now on, as the shell does for a foreground job. Its
 * pid; 0 when it could not be run (said, and *status as a shell's: 127 not
 * found, 126 not runnable). */
static int spawn_child(char **argv, int *status)
{
    char parent[24];
    snprintf(parent, sizeof parent, "%ld", (long)getpid());
    unsetenv("MEMPROF_OWNER_PID");
    setenv("MEMPROF_OWNER_PARENT", parent, 1);
    pid_t pid;
    int err = posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ);
    if (err == ENOEXEC) {
        /* No #! line: a shell script, run as execvp runs one. */
        char path[PATH_MAX];
        size_t n = 0;
        while (argv[n])
            n++;
        char **with_sh = calloc(n + 2, sizeof *with_sh);
        if (!with_sh)
            return fail("out of memory"), -1;
        with_sh[0] = "sh";
        for (size_t i = 0; i < n; i++)
            with_sh[i + 1] = argv[i];
        if (find_in_path(argv[0], path, sizeof path)) {
            with_sh[1] = path;
            err = posix_spawn(&pid, "/bin/sh", NULL, NULL, with_sh, environ);
        }
        free(with_sh);
    }
    if (err) {
        fprintf(stderr, "memprof: cannot run %s: %s\n", argv[0], err == ENOENT ? "command not found" : strerror(err));
        *status = W_EXITCODE(err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC, 0);
        return 0;
    }
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    return pid;
}

/* Its wait status in *status. */
static void wait_child(pid_t pid, int *status)
{
    while (waitpid(pid, status, 0) < 0 && errno == EINTR)
        ;
}

/* spawn_child, then wait_child. */
static int run_child(char **argv, int *status)
{
    pid_t pid = spawn_child(argv, status);
    if (pid > 0)
        wait_child(pid, status);
    return pid;
}

/* COMMAND's exit status passed on, or its death by a signal, as with exec. */
static int exit_like(int status, int rc)
{
    if (WIFSIGNALED(status)) {
        signal(WTERMSIG(status), SIG_DFL);
        raise(WTERMSIG(status));
        return 128 + WTERMSIG(status);
    }
    return rc ? rc : WEXITSTATUS(status);
}

/* The moment a run starts, a little early: file times come from a coarse
 * clock (a tick of the kernel's) that may lag the one read here. */
static void run_start_time(struct timespec *t)
{
    clock_gettime(CLOCK_REALTIME, t);
    if (t->tv_nsec >= 50000000) {
        t->tv_nsec -= 50000000;
    } else {
        t->tv_sec--;
        t->tv_nsec += 950000000;
    }
}

static bool written_since(const struct stat *st, const struct timespec *since)
{
    return st->st_mtim.tv_sec > since->tv_sec ||
           (st->st_mtim.tv_sec == since->tv_sec && st->st_mtim.tv_nsec >= since->tv_nsec);
}

struct beside { char *path; struct timespec written; };

/* Oldest first; ties by name. */
static int by_time_written(const void *x, const void *y)
{
    const struct beside *a = x, *b = y;
    if (a->written.tv_sec != b->written.tv_sec)
        return a->written.tv_sec < b->written.tv_sec ? -1 : 1;
    if (a->written.tv_nsec != b->written.tv_nsec)
        return a->written.tv_nsec < b->written.tv_nsec ? -1 : 1;
    return strcmp(a->path, b->path);
}

/* What a Ruby process's teardown left, beside its raw report RAW. */
static const char teardown_suffix[] = ".teardown";

/* The reports other processes wrote beside `path` since `since`: names
 * PATH.PID.NAME (not ending in .teardown), in *names, the first written
 * first (freed by the caller); how many. */
static size_t reports_beside(const char *path, const struct timespec *since, char ***names)
{
    char dir_copy[PATH_MAX], base_copy[PATH_MAX];
    snprintf(dir_copy, sizeof dir_copy, "%s", path);
    snprintf(base_copy, sizeof base_copy, "%s", path);
    const char *dir = dirname(dir_copy), *base = basename(base_copy);
    size_t base_len = strlen(base), n = 0;
    struct beside *found = NULL;
    *names = NULL;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d));) {
        const char *rest = e->d_name + base_len;
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, base, base_len) != 0 || rest[0] != '.' || !(rest[1] >= '0' && rest[1] <= '9'))
            continue;
        char *end;
        strtol(rest + 1, &end, 10);
        size_t suffix_len = sizeof teardown_suffix - 1;
        if (*end != '.' || (len > suffix_len && strcmp(e->d_name + len - suffix_len, teardown_suffix) == 0))
            continue;
        char *full;
        struct stat st;
        if (asprintf(&full, "%s/%s", strcmp(dir, "/") ? dir : "", e->d_name) < 0)
            break;
        struct beside *grown = NULL;
        if (lstat(full, &st) != 0 || !S_ISREG(st.st_mode) || !written_since(&st, since) ||
            !(grown = realloc(found, (n + 1) * sizeof *grown))) {
            free(full);
            continue;
        }
        found = grown;
        found[n++] = (struct beside){ full, st.st_mtim };
    }
    closedir(d);
    qsort(found, n, sizeof *found, by_time_written);
    *names = n ? malloc(n * sizeof **names) : NULL;
    for (size_t i = 0; i < n; i++) {
        if (*names)
            (*names)[i] = found[i].path;
        else
            free(found[i].path);
    }
    free(found);
    return *names ? n : 0;
}

static void free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* --pprof-proto FILE (or MEMPROF_PPROF_PROTO), resolved; "" when not asked for. */
static char proto_output[PATH_MAX];
/* --group: enum ruby_group bits, and the rows each table shows (--top). */
static unsigned ruby_groups;
static unsigned long strings_top;   /* --strings N */
static unsigned long groups_top = 50;   /* memory_profiler's default */

/* COMMAND's report (a raw heap report, or the Ruby table) as a profile in
 * `proto`: 0, or EXIT_USAGE after a one-line message. */
static int write_proto(FILE *report, const char *proto)
{
    char first[32] = "";
    bool raw = fgets(first, sizeof first, report) && strncmp(first, "# memprof heap:", 15) == 0;
    rewind(report);
    struct stacks s = { 0 };
    if (!raw && stacks_read(report, proto, &s) != 0)
        return EXIT_USAGE;
    struct output out;
    char why[256] = "";
    int rc = output_open(&out, proto);
    if (!rc) {
        bool failed = raw ? heap_report_proto(report, out.fp, why, sizeof why) != 0
                          : stacks_proto(&s, out.fp, why, sizeof why) != 0;
        if (failed)
            fprintf(stderr, "memprof: --pprof-proto %s: %s\n", proto, why);
        rc = output_close(&out, failed);
    }
    stacks_free(&s);
    return rc ? EXIT_USAGE : 0;
}

/* One process's raw heap report (and what its teardown left, RAW.teardown)
 * named and written to `output` (NULL: stderr), and as a profile to `proto`
 * (NULL: none). 0, or EXIT_USAGE when `output` cannot be written. */
static int write_proto(FILE *raw, const char *proto);

static int name_heap_report(const char *raw, const char *output, const char *proto, pid_t pid,
                            const struct heap_report_options *base, bool *reported)
{
    *reported = false;
    FILE *in = fopen(raw, "r");
    if (!in)
        return 0;
    char teardown_path[PATH_MAX];
    snprintf(teardown_path, sizeof teardown_path, "%s%s", raw, teardown_suffix);
    FILE *teardown = fopen(teardown_path, "r");
    int rc = 0;
    if (fgetc(in) != EOF) {
        *reported = true;
        rewind(in);
        struct heap_report_options opt = *base, after = *base;
        if (teardown) {
            opt.when = "at the end of the program (before the Ruby VM's teardown) of";
            after.when = "still live after the Ruby VM's teardown (never freed: leaks) of";
        }
        struct output out;
        if (output_open(&out, output) != 0) {
            rc = EXIT_USAGE;   /* an unusable -o FILE: status 2, as before the run */
        } else {
            if (!output)
                out.fp = stderr;
            bool failed = heap_report_symbolize(in, out.fp, pid, &opt) != 0;
            if (teardown && !failed && fgetc(teardown) != EOF) {
                rewind(teardown);
                failed = heap_report_symbolize(teardown, out.fp, pid, &after) != 0;
            }
            if (output && output_close(&out, failed) != 0)
                rc = EXIT_USAGE;
        }
        if (proto && !rc) {
            rewind(in);
            rc = write_proto(in, proto);
        }
    }
    fclose(in);
    if (teardown)
        fclose(teardown);
    unlink(teardown_path);
    unlink(raw);
    return rc;
}

/* "RAW.PID.NAME" -> PID. */
static pid_t pid_of_beside(const char *name, size_t prefix_len)
{
    return (pid_t)strtol(name + prefix_len + 1, NULL, 10);
}

/* --peak-report FILE, resolved; "" when not asked for. */
static char peak_output[PATH_MAX];
/* --timeline FILE.svg|FILE.csv, resolved; "" when not asked for. */
static char timeline_output[PATH_MAX];

static int run_heap_in(char **argv, const char *output, const char *dir, pid_t *pid_out, int *status_out);

/* Whether `name`, just made in the run's scratch directory, is COMMAND's
 * last raw report (RAW itself, or RAW.teardown: what its teardown left),
 * whole: it ends with HEAP_RAW_FINAL. */
static bool is_final_report(const char *name, void *raw_path)
{
    const char *raw = raw_path, *slash = strrchr(raw, '/'), *base = slash ? slash + 1 : raw;
    size_t n = strlen(base);
    if (strncmp(name, base, n) != 0 || (name[n] && strcmp(name + n, teardown_suffix) != 0))
        return false;
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%.*s%s", (int)(base - raw), raw, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return false;
    static const char last[] = "\n" HEAP_RAW_FINAL;
    char tail[sizeof last - 1];
    struct stat st;
    bool final = fstat(fd, &st) == 0 && st.st_size >= (off_t)sizeof tail &&
                 pread(fd, tail, sizeof tail, st.st_size - (off_t)sizeof tail) == (ssize_t)sizeof tail &&
                 memcmp(tail, last, sizeof tail) == 0;
    close(fd);
    return final;
}

/* --heap: run COMMAND, then name the sites of each profiled process's raw
 * heap report: COMMAND's own to stderr or `output`, any other process's to
 * stderr or OUTPUT.PID.NAME. The raw reports go to a scratch directory of
 * the run's: other processes' reports are looked for in it alone (not in
 * the whole of TMPDIR), and none of its names needs reserving. */
static int run_with_heap_report(char **argv, const char *output)
{
    char dir[PATH_MAX];
    int rc = scratch_make(dir, sizeof dir, (uid_t)-1);
    if (rc)
        return rc;
    pid_t pid = 0;
    int status = 0;
    rc = run_heap_in(argv, output, dir, &pid, &status);
    scratch_remove(dir);   /* before exit_like, which may raise COMMAND's signal */
    return pid < 0 ? EXIT_USAGE : exit_like(status, rc);
}

/* The run itself, in `dir`: COMMAND's pid (0: it could not be run, -1: no
 * fork) and status, and 0 or the reports' failure. */
static int run_heap_in(char **argv, const char *output, const char *dir, pid_t *pid_out, int *status_out)
{
    char raw[PATH_MAX + 8];
    snprintf(raw, sizeof raw, "%s/heap", dir);
    setenv("MEMPROF_HEAP", "1", 1);
    const char *frames = getenv("MEMPROF_FRAMES");
    if (frames)   /* --frames N: N frames per heap site */
        setenv("MEMPROF_HEAP_FRAMES", frames, 1);
    setenv("MEMPROF_HEAP_OUTPUT", raw, 1);
    /* Every raw file of the run (COMMAND's, its children's RAW.PID.NAME, the
     * peak's and the timeline's) is read back here at once: none is synced. */
    setenv("MEMPROF_SCRATCH", raw, 1);
    setenv("MEMPROF_OUTPUT", "none", 1);
    if (*proto_output)   /* the profile's alloc_* count the sites whose blocks are freed too */
        setenv("MEMPROF_HEAP_FREED_SITES", "1", 1);
    char peak_raw[PATH_MAX + 16];
    snprintf(peak_raw, sizeof peak_raw, "%s.peak", raw);
    if (*peak_output)
        setenv("MEMPROF_PEAK_REPORT", peak_raw, 1);
    char timeline_raw[PATH_MAX + 24];
    snprintf(timeline_raw, sizeof timeline_raw, "%s.timeline", raw);
    if (*timeline_output)
        setenv("MEMPROF_TIMELINE", timeline_raw, 1);
    const char *top = getenv("MEMPROF_TOP"), *filter = getenv("MEMPROF_FILTER");
    struct heap_report_options opt = { .top = top ? strtoul(top, NULL, 10) : 0, .filter = filter && *filter ? filter : NULL };
    const char *proto = *proto_output ? proto_output : NULL;
    struct timespec since;
    run_start_time(&since);
    /* A report to a file is named as soon as the runtime wrote it whole,
     * while COMMAND's process ends (a large heap takes milliseconds to give
     * back); one on stderr after COMMAND's last words, as before. */
    struct scratch_watch watch;
    bool watching = output && scratch_watch_start(&watch, dir);
    int status, rc = 0;
    bool reported = false, named = false;
    pid_t pid = *pid_out = spawn_child(argv, &status);
    if (pid > 0 && watching && scratch_watch_until(&watch, pid, is_final_report, raw)) {
        rc = name_heap_report(raw, output, proto, pid, &opt, &reported);
        named = true;
    }
    if (watching)
        scratch_watch_end(&watch);
    if (pid > 0)
        wait_child(pid, &status);
    *status_out = status;
    if (pid <= 0)
        return 0;
    char **others;
    size_t n = reports_beside(raw, &since, &others), first = 0;
    size_t raw_len = strlen(raw);
    if (!named)
        rc = name_heap_report(raw, output, proto, pid, &opt, &reported);
    if (!reported && n) {
        /* A wrapper (sh -c, env, ...) that wrote none: the first report of
         * the processes it started takes its place. */
        pid_t first_pid = pid_of_beside(others[0], raw_len);
        rc = name_heap_report(others[first++], output, proto, first_pid, &opt, &reported);
        fprintf(stderr, "memprof: %s (pid %ld) wrote no C heap report; %s holds that of pid %ld, the first to end\n",
                argv[0], (long)pid, output ? output : "the report above", (long)first_pid);
    } else if (!reported) {
        fprintf(stderr, "memprof: %s (pid %ld) wrote no C heap report: it %s\n", argv[0], (long)pid,
                WIFSIGNALED(status) ? "was killed by a signal (--on-signal writes the report first)"
                                    : "ended without running its exit handlers (_exit)");
    }
    for (size_t i = first; i < n; i++) {
        char *mine = NULL;
        if (output && asprintf(&mine, "%s%s", output, others[i] + raw_len) < 0)
            continue;
        if (name_heap_report(others[i], mine, NULL, pid_of_beside(others[i], raw_len), &opt, &reported) == 0 &&
            reported && mine)
            fprintf(stderr, "memprof: the C heap of pid %ld is in %s\n",
                    (long)pid_of_beside(others[i], raw_len), mine);
        free(mine);
    }
    free_names(others, n);
    if (*timeline_output) {
        /* COMMAND's own, drawn; those of the processes it started are not
         * kept. */
        FILE *in = fopen(timeline_raw, "r");
        if (in) {
            int timeline_rc = timeline_convert(in, timeline_raw, timeline_output);
            if (timeline_rc && !rc)
                rc = timeline_rc;
            fclose(in);
            unlink(timeline_raw);
        } else {
            fprintf(stderr, "memprof: %s (pid %ld) wrote no timeline: it %s\n", argv[0], (long)pid,
                    WIFSIGNALED(status) ? "was killed by a signal" : "ended without running its exit handlers (_exit)");
        }
    }
    if (*peak_output) {
        /* COMMAND's own peak, named; those of the processes it started are
         * not kept (the exit reports above say where their heaps went). */
        int peak_rc = name_heap_report(peak_raw, peak_output, NULL, pid, &opt, &reported);
        if (peak_rc && !rc)
            rc = peak_rc;
        if (!reported)
            fprintf(stderr, "memprof: %s (pid %ld) wrote no peak report: its heap never held a live block\n",
                    argv[0], (long)pid);
    }
    return rc;
}

/* --group: the grouped tables after the report, on stderr, or at the end of
 * the report FILE (written again whole). 0, or 1 after a message. */
static int append_groups(FILE *table, const char *output)
{
    char here[PATH_MAX];
    const char *app = getcwd(here, sizeof here);   /* COMMAND ran here: its files are the app's */
    if (!output)
        return ruby_groups_write(table, stderr, ruby_groups, groups_top, app, strings_top);
    FILE *report = fopen(output, "r");
    if (!report) {
        fprintf(stderr, "memprof: cannot read %s to add the groups to it: %s\n", output, strerror(errno));
        return 1;
    }
    struct output out;
    if (output_open(&out, output) != 0) {
        fclose(report);
        return 1;
    }
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, report)) > 0)
        fwrite(buf, 1, n, out.fp);
    bool failed = ferror(report) != 0;
    fclose(report);
    failed |= ruby_groups_write(table, out.fp, ruby_groups, groups_top, app, strings_top) != 0;
    return output_close(&out, failed);
}

/* Ruby: run COMMAND; then say where the reports of other profiled
 * processes are, and whether COMMAND's own process wrote one. */
static int run_with_ruby_report(char **argv, const char *output)
{
    /* --pprof-proto, --group: the runtime also writes its whole table, with
     * bytes and allocated counts. */
    char dir[PATH_MAX], table[PATH_MAX + 8] = "";
    if (*proto_output || ruby_groups || strings_top) {
        int made = scratch_make(dir, sizeof dir, (uid_t)-1);
        if (made)
            return made;
        snprintf(table, sizeof table, "%s/table", dir);
        setenv("MEMPROF_RUBY_TABLE", table, 1);
        setenv("MEMPROF_SCRATCH", table, 1);
    }
    struct timespec since;
    run_start_time(&since);
    int status;
    pid_t pid = run_child(argv, &status);
    int proto_rc = 0;
    if (*table) {
        FILE *in = pid > 0 ? fopen(table, "r") : NULL;
        if (in && fgetc(in) != EOF) {
            rewind(in);
            if (*proto_output)
                proto_rc = write_proto(in, proto_output);
            rewind(in);
            if ((ruby_groups || strings_top) && !proto_rc)
                proto_rc = append_groups(in, output);
        } else if (pid > 0) {
            fprintf(stderr, "memprof: %s (pid %ld) wrote no Ruby table%s%s\n", argv[0], (long)pid,
                    *proto_output ? ": no profile in " : ": no groups", proto_output);
        }
        if (in)
            fclose(in);
        scratch_remove(dir);
    }
    if (pid <= 0)
        return pid < 0 ? EXIT_USAGE : exit_like(status, 0);
    if (output) {
        char **others;
        size_t n = reports_beside(output, &since, &others), first = 0;
        struct stat st;
        bool there = lstat(output, &st) == 0;
        if ((!there || S_ISREG(st.st_mode)) && !(there && written_since(&st, &since))) {
            if (n && rename(others[0], output) == 0) {
                /* A wrapper (sh -c, env, rake ...) that is not Ruby: the
                 * first report of the processes it started takes its place. */
                fprintf(stderr, "memprof: %s (pid %ld) wrote no report; %s holds that of pid %ld, the first to end\n",
                        argv[0], (long)pid, output, (long)pid_of_beside(others[0], strlen(output)));
                first = 1;
            } else {
                fprintf(stderr, "memprof: %s (pid %ld) wrote no report to %s: it ran no Ruby code, or died before its end\n",
                        argv[0], (long)pid, output);
            }
        }
        for (size_t i = first; i < n; i++)
            fprintf(stderr, "memprof: pid %ld wrote its own report: %s\n",
                    (long)pid_of_beside(others[i], strlen(output)), others[i]);
        free_names(others, n);
    }
    return exit_like(status, proto_rc);
}

static int cmd_run(int argc, char **argv)
{
    const char *output = NULL;
    bool heap = false, by_thread = false;
    struct cli_args a;
    int k = CLI_END, rc = 0;
    char path[PATH_MAX];
    cli_begin(&a, &run_command, argc, argv);
    while (rc == 0 && (k = cli_next(&a)) >= 0) {
        switch (k) {
        case RUN_OUTPUT: output = a.value; break;
        case RUN_HEAP: break;
        case RUN_STRINGS:
            strings_top = (unsigned long)a.number;
            setenv("MEMPROF_STRINGS", "1", 1);   /* the runtime's whole table has them */
            break;
        case RUN_GROUP:
            ruby_groups |= ruby_group_named(a.value);
            break;
        case RUN_HOOK:   /* SPEC, as memprof-hook's words; several are joined with ';' */
            if (strchr(a.value, ';'))
                return cli_fail(&run_command, "--hook: '%s' is one spec (repeat --hook for several)", a.value);
            rc = append_env("MEMPROF_HOOKS", ";", a.value);
            break;
        case RUN_WRAPPER:   /* the patterns join MEMPROF_WRAPPERS, comma-separated */
            if (strchr(a.value, ','))
                return cli_fail(&run_command, "--wrapper: '%s' is not one function name or glob", a.value);
            rc = append_env("MEMPROF_WRAPPERS", ",", a.value);
            break;
        case RUN_ON_SIGNAL: rc = take_signals(a.value); break;
        case RUN_SERVE: {
            /* The runtime runs this memprof to make each profile. */
            char self[PATH_MAX];
            ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
            if (n > 0) {
                self[n] = '\0';
                setenv("MEMPROF_CLI", self, 1);
            }
            setenv("MEMPROF_SERVE", a.value, 1);
            break;
        }
        case RUN_PEAK_REPORT: rc = memprof_resolve_output(a.value, peak_output, sizeof peak_output); break;
        case RUN_TIMELINE:
            if (!timeline_output_named(a.value))
                return cli_fail(&run_command, "--timeline %s: name it FILE.svg (a chart) or FILE.csv (the series)",
                                a.value);
            rc = memprof_resolve_output(a.value, timeline_output, sizeof timeline_output);
            break;
        case RUN_PPROF_PROTO: rc = memprof_resolve_output(a.value, proto_output, sizeof proto_output); break;
        case RUN_DUMP:
        case RUN_PPROF:   /* written by the runtime at exit */
            if (!(rc = memprof_resolve_output(a.value, path, sizeof path)))
                setenv(k == RUN_DUMP ? "MEMPROF_DUMP" : "MEMPROF_HEAP_PPROF", path, 1);
            break;
        default:
            setenv(run_option_env[k], a.value ? a.value : "1", 1);
            if (k == RUN_TOP)
                groups_top = (unsigned long)a.number;
            break;
        }
        /* The options that are the C heap's. */
        heap |= k == RUN_HEAP || k == RUN_SAMPLE_BYTES || k == RUN_PPROF || k == RUN_HOOK || k == RUN_AT_PEAK ||
                k == RUN_TIMELINE || k == RUN_PEAK_REPORT;
        by_thread |= k == RUN_BY_THREAD;
    }
    if (rc)
        return rc;
    if (k != CLI_END)
        return cli_status(k);
    if ((ruby_groups || strings_top) && heap)
        return fail("run: --%s is of the Ruby table, not the C heap's (--heap)", ruby_groups ? "group" : "strings");
    if (by_thread && !heap)
        return fail("run: --by-thread needs --heap (rows by thread are for the C heap)");
    const char *proto_env = getenv("MEMPROF_PPROF_PROTO");
    if (!*proto_output && proto_env && *proto_env) {
        int rc = memprof_resolve_output(proto_env, proto_output, sizeof proto_output);
        if (rc)
            return rc;
    }
    char output_path[PATH_MAX];
    if (output) {
        int rc = memprof_resolve_output(output, output_path, sizeof output_path);
        if (rc)
            return rc;
    }
    const char *runtime = runtime_path();
    if (access(runtime, R_OK) != 0)
        return fail("runtime not found at %s (set MEMPROF_RUNTIME to its path): %s", runtime, strerror(errno));

    /* The runtime goes first, before anything the user already preloads. */
    const char *old = getenv("LD_PRELOAD");
    char *preload = NULL;
    if (asprintf(&preload, "%s%s%s", runtime, old && *old ? ":" : "", old && *old ? old : "") < 0)
        return fail("out of memory");
    setenv("LD_PRELOAD", preload, 1);
    setenv("MEMPROF_START", "1", 1);
    setenv("MEMPROF_OUTPUT", output ? output_path : "stderr", 1);
    free(preload);
    if (heap)
        return run_with_heap_report(a.operands, output ? output_path : NULL);
    return run_with_ruby_report(a.operands, output ? output_path : NULL);
}

/* Names read from debug information remembered across runs (the symbolizer's
 * name_cache.h), in $XDG_CACHE_HOME/memprof/names or ~/.cache/memprof/names
 * (made, 0700, by the first run that has names to keep); MEMPROF_NAME_CACHE=0
 * turns it off. */
static void remember_names(void)
{
    const char *off = getenv("MEMPROF_NAME_CACHE");
    if (off && (strcmp(off, "0") == 0 || strcmp(off, "off") == 0))
        return;
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char dir[PATH_MAX];
    int n = xdg && *xdg == '/' ? snprintf(dir, sizeof dir, "%s/memprof/names", xdg)
            : home && *home == '/' ? snprintf(dir, sizeof dir, "%s/.cache/memprof/names", home)
                                   : -1;
    if (n > 0 && (size_t)n < sizeof dir)
        symbolizer_remember_in(dir);
}

int main(int argc, char **argv)
{
    /* Run as $(pkglibexecdir)/crash-helper by the kernel's core_pattern. */
    const char *slash = strrchr(argv[0], '/');
    if (strcmp(slash ? slash + 1 : argv[0], "crash-helper") == 0)
        return cmd_crash_helper(argc - 1, argv + 1);
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
        printf("memprof %s\n", PACKAGE_VERSION);
        return 0;
    }
    static const struct {
        const char *name;
        int (*run)(int argc, char **argv);
    } commands[] = {
        { "run", cmd_run },           { "attach", cmd_attach }, { "threads", cmd_threads },
        { "collapse", cmd_collapse }, { "flamegraph", cmd_flamegraph }, { "diff", cmd_diff },
        { "merge", cmd_merge },       { "top", cmd_top },
        { "proto", cmd_proto },
        { "timeline", cmd_timeline }, { "groups", cmd_groups },
        { "symbols", cmd_symbols },   { "imports", cmd_imports },   { "symbolize", cmd_symbolize },
        { "heap-table", cmd_heap_table }, { "name-sites", cmd_name_sites },
        { "safe-point", cmd_safe_point }, { "keep", cmd_keep }, { "crash-helper", cmd_crash_helper },
        { "core", cmd_core },
    };
    if (strcmp(cmd, "crash-helper") != 0)   /* (the kernel's helper, as root: nothing of a user's) */
        remember_names();
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(cmd, commands[i].name) == 0)
            return commands[i].run(argc - 2, argv + 2);
    fprintf(stderr, "memprof: unknown command '%s' (try 'memprof --help')\n", cmd);
    return EXIT_USAGE;
}
