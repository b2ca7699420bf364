/* memprof: the command-line companion.
 *
 *   memprof run [-o FILE] [OPTIONS] [--] CMD [ARGS...]
 *
 * `run` execs CMD with the runtime preloaded, so CMD's exit status and signals
 * are its own; the runtime writes the report when CMD exits. */
#include "commands.h"
#include "runtime/report_signals.h"
#include "output.h"
#include "format/pprof.h"
#include "util/atomic_file.h"
#include <errno.h>
#include <signal.h>
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
    EXIT_USAGE = 2,          /* bad arguments, unusable -o path, runtime missing */
    EXIT_CANNOT_EXEC = 126,  /* as the shell: found but not executable */
    EXIT_NOT_FOUND = 127,    /* as the shell: no such command */
};

static void usage(FILE *f)
{
    fputs("usage: memprof run [-o FILE] [OPTIONS] [--] COMMAND [ARGS...]\n"
          "       memprof attach PID [--seconds N] [-o FILE] [--ruby|--heap|--all]\n"
          "       memprof threads -p PID\n"
          "       memprof collapse [--count|--bytes] [--format collapsed|speedscope] [-o FILE] REPORT\n"
          "       memprof flamegraph [--count|--bytes] [--title TEXT] [-o FILE.svg] REPORT\n"
          "       memprof diff [-o FILE] BEFORE AFTER\n"
          "       memprof proto [-o FILE.pb.gz] REPORT\n"
          "       memprof timeline [-o FILE.svg|FILE.csv] TIMELINE\n"
          "       memprof symbols [--all] [--arch ARCH] FILE\n"
          "       memprof imports [--arch ARCH] [--format text|tsv|json] FILE\n"
          "       memprof symbolize FILE ADDRESS...\n"
          "       memprof heap-table [--top N] [--filter TEXT] [FILE|-]\n"
          "       memprof name-sites < TEXT\n"
          "       memprof safe-point [--thread N] < BACKTRACES\n"
          "       memprof keep --dir DIR NAME < TEXT\n"
          "       memprof core [--ruby|--heap] [--top N] [--filter TEXT] [--pprof-proto FILE] CORE [PROGRAM]\n"
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
          "  proto       a report as pprof's profile.proto, gzipped (go tool pprof, Pyroscope,\n"
          "              Grafana, speedscope): a raw C heap report (MEMPROF_HEAP_OUTPUT's)\n"
          "              named here, with every sample type; a Ruby table or dump\n"
          "  (collapse, flamegraph and diff also read such profiles)\n"
          "  timeline    the runtime's MEMPROF_TIMELINE file as a chart (-o FILE.svg) or\n"
          "              a CSV series (-o FILE.csv, or stdout)\n"
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
          "Options for run:\n"
          "  -o, --output FILE   write the report to FILE (mode 0600, replaced atomically;\n"
          "                      %p in FILE becomes the process id); every other\n"
          "                      profiled process writes its own, FILE.PID.NAME\n"
          "  --heap              trace the C heap instead (any program): when COMMAND\n"
          "                      exits, print its live malloc blocks by call site\n"
          "  --by-thread         with --heap: a row per call site and allocating thread\n"
          "  --sample-bytes N    with the C heap (implies --heap): record an allocation\n"
          "                      per N bytes on average, as tcmalloc does; the report\n"
          "                      scales counts and bytes back and states its error\n"
          "  --pprof FILE        the C heap also as a google-pprof heap profile (implies\n"
          "                      --heap): google-pprof --text COMMAND FILE\n"
          "  --pprof-proto FILE  the report also as pprof's profile.proto, gzipped: the C\n"
          "                      heap's sites named, or the live Ruby objects with their\n"
          "                      class as a label (go tool pprof -top FILE)\n"
          "  --dump FILE         the live Ruby objects at exit as JSON lines in the schema\n"
          "                      of ObjectSpace.dump_all (heapy reads it)\n"
          "  --hook SPEC         with the C heap (implies --heap): a custom allocator's\n"
          "                      blocks too, SPEC as for GDB's memprof-hook, e.g.\n"
          "                      'pool_alloc size=arg1 ptr=ret', 'pool_free ptr=arg1',\n"
          "                      '--calls newobj ptr=ret' (repeat for several)\n"
          "  --site nearest|user attribute each object to the nearest Ruby frame (default),\n"
          "                      or to the first frame outside gems and the standard library\n"
          "  --frames N          record N Ruby frames per site (1-64; default 1)\n"
          "  --sample N          record 1 in N allocations; counts are scaled estimates\n"
          "  --bytes             add a bytes column (object slot + memory it owns)\n"
          "  --sort count|bytes  largest count (default) or largest bytes first\n"
          "  --top N             only the first N rows\n"
          "  --filter TEXT       only rows whose file:line:Class contains TEXT\n"
          "  --at-peak           the report is the C heap as it was when live bytes were\n"
          "                      highest, within 10% (MEMPROF_PEAK_STEP) + 64 KiB a thread\n"
          "                      (implies --heap)\n"
          "  --timeline FILE     the C heap over time (implies --heap): FILE.svg a stacked\n"
          "                      area chart of the sites that held the most, the peak\n"
          "                      marked; FILE.csv the series (MEMPROF_TIMELINE)\n"
          "  --peak-report FILE  also the C heap as it was at its peak (implies --heap),\n"
          "                      within 10% (MEMPROF_PEAK_STEP) + 64 KiB a thread; written\n"
          "                      even if COMMAND\n"
          "                      is killed (the OOM killer)\n"
          "  --on-signal LIST    if COMMAND gets one of these signals (SIGSEGV,SIGABRT,...),\n"
          "                      write the report first, then let the signal act\n"
          "\n"
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

/* The options of `run` that become the runtime's environment variables. */
struct run_option {
    const char *flag;      /* --name */
    const char *env;       /* MEMPROF_... */
    const char *const *words;  /* allowed values, or NULL for a number */
    long min, max;         /* for numbers */
    bool takes_value;
};
static const char *const site_words[] = { "nearest", "user", NULL };
static const char *const sort_words[] = { "count", "bytes", NULL };
static const struct run_option run_options[] = {
    { "--site", "MEMPROF_SITE", site_words, 0, 0, true },
    { "--frames", "MEMPROF_FRAMES", NULL, 1, 64, true },
    { "--sample", "MEMPROF_SAMPLE", NULL, 1, 1L << 30, true },
    { "--sample-bytes", "MEMPROF_SAMPLE_BYTES", NULL, 1, 1L << 40, true },
    { "--sort", "MEMPROF_SORT", sort_words, 0, 0, true },
    { "--top", "MEMPROF_TOP", NULL, 1, 1L << 40, true },
    { "--filter", "MEMPROF_FILTER", NULL, 0, 0, true },
    { "--bytes", "MEMPROF_BYTES", NULL, 0, 0, false },
    { "--by-thread", "MEMPROF_HEAP_BY_THREAD", NULL, 0, 0, false },
};

/* Handle argv[*i] if it is one of run_options: 1 handled, 0 not one, 2 error. */
static int take_run_option(int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    if (strcmp(a, "--wrapper") == 0 || strncmp(a, "--wrapper=", 10) == 0) {
        /* Repeatable: the patterns join MEMPROF_WRAPPERS, comma-separated. */
        if (!a[9] && *i + 1 >= argc)
            return fail("%s needs a value", "--wrapper"), 2;
        const char *value = a[9] ? a + 10 : argv[++*i];
        if (!*value || strchr(value, ','))
            return fail("--wrapper: '%s' is not one function name or glob", value), 2;
        const char *before = getenv("MEMPROF_WRAPPERS");
        char *joined = NULL;
        if (asprintf(&joined, "%s%s%s", before && *before ? before : "", before && *before ? "," : "", value) < 0)
            return fail("out of memory"), 2;
        setenv("MEMPROF_WRAPPERS", joined, 1);
        free(joined);
        return 1;
    }
    if (strcmp(a, "--on-signal") == 0 || strncmp(a, "--on-signal=", 12) == 0) {
        if (!a[11] && *i + 1 >= argc)
            return fail("%s needs a value", "--on-signal"), 2;
        const char *value = a[11] ? a + 12 : argv[++*i];
        char words[256];
        snprintf(words, sizeof words, "%s", value);
        char *save = NULL;
        for (char *w = strtok_r(words, ",", &save); w; w = strtok_r(NULL, ",", &save))
            if (report_signal_index(w) < 0)
                return fail("--on-signal: '%s' is not a signal memprof reports at (SIGSEGV, SIGABRT, SIGBUS, "
                            "SIGILL, SIGFPE, SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1, SIGUSR2, SIGXCPU, "
                            "SIGXFSZ, SIGPIPE, SIGALRM)", w), 2;
        if (!*value)
            return fail("--on-signal: '%s' names no signal", value), 2;
        setenv("MEMPROF_ON_SIGNAL", value, 1);
        return 1;
    }
    for (size_t k = 0; k < sizeof run_options / sizeof *run_options; k++) {
        const struct run_option *o = &run_options[k];
        size_t n = strlen(o->flag);
        const char *value;
        if (strcmp(a, o->flag) == 0) {
            if (!o->takes_value) {
                setenv(o->env, "1", 1);
                return 1;
            }
            if (*i + 1 >= argc)
                return fail("%s needs a value", a), 2;
            value = argv[++*i];
        } else if (o->takes_value && strncmp(a, o->flag, n) == 0 && a[n] == '=') {
            value = a + n + 1;
        } else {
            continue;
        }
        if (o->words) {
            bool known = false;
            for (const char *const *w = o->words; *w; w++)
                known |= strcmp(*w, value) == 0;
            if (!known)
                return fail("%s: unknown value '%s' (use %s or %s)", o->flag, value, o->words[0], o->words[1]), 2;
        } else if (strcmp(o->flag, "--filter") != 0 && memprof_whole_number(value, o->min, o->max) < 0) {
            return fail("%s: '%s' is not a whole number from %ld to %ld", o->flag, value, o->min, o->max), 2;
        } else if (strcmp(o->flag, "--filter") == 0 && !*value) {
            return fail("%s needs a non-empty text", o->flag), 2;
        }
        setenv(o->env, value, 1);
        return 1;
    }
    return 0;
}

/* COMMAND as a child that owns the report paths (MEMPROF_OWNER_PID): other
 * profiled processes it starts write their own reports beside them. Waits
 * for it with Ctrl-C going to COMMAND, as the shell does for a foreground
 * job; its wait status in *status. Its pid; 0 when it could not be run (the
 * child said why), -1 after a message. */
static int run_command(char **argv, int *status)
{
    /* The child says through this pipe (closed by a successful exec) why
     * COMMAND could not be run: that is memprof's message, not a report's. */
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0)
        return fail("cannot make a pipe: %s", strerror(errno)), -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return fail("cannot fork: %s", strerror(errno)), -1;
    if (pid == 0) {
        char own[24];
        snprintf(own, sizeof own, "%ld", (long)getpid());
        setenv("MEMPROF_OWNER_PID", own, 1);
        execvp(argv[0], argv);
        int err = errno;
        fprintf(stderr, "memprof: cannot run %s: %s\n", argv[0],
                err == ENOENT ? "command not found" : strerror(err));
        if (write(report[1], &err, sizeof err) < 0)
            _exit(EXIT_CANNOT_EXEC);
        _exit(err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC);
    }
    close(report[1]);
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    int err = 0;
    ssize_t got;
    while ((got = read(report[0], &err, sizeof err)) < 0 && errno == EINTR)
        ;
    close(report[0]);
    while (waitpid(pid, status, 0) < 0 && errno == EINTR)
        ;
    return got > 0 ? 0 : pid;
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
        if (*end != '.' || (len > 9 && strcmp(e->d_name + len - 9, ".teardown") == 0))
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
    snprintf(teardown_path, sizeof teardown_path, "%s.teardown", raw);
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

/* The run's scratch directory, made in TMPDIR (mode 0700): the raw files
 * COMMAND and the processes it starts write, read back at once. Other
 * processes' reports are looked for in it alone (not in the whole of
 * TMPDIR), and none of its names needs reserving with a file of its own
 * (which made each report a rename over it). 0, or EXIT_USAGE said. */
static int scratch_make(char *dir, size_t size)
{
    const char *tmpdir = getenv("TMPDIR");
    const char *base = tmpdir && *tmpdir ? tmpdir : "/tmp";
    if ((size_t)snprintf(dir, size, "%s/memprof.XXXXXX", base) >= size || !mkdtemp(dir))
        return fail("cannot create a temporary directory in %s: %s", base, strerror(errno ? errno : ENAMETOOLONG));
    return 0;
}

/* The scratch directory gone, with whatever is left in it. */
static void scratch_remove(const char *dir)
{
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            unlinkat(dirfd(d), e->d_name, 0);
    if (d)
        closedir(d);
    rmdir(dir);
}

static int run_heap_in(char **argv, const char *output, const char *dir, pid_t *pid_out, int *status_out);

/* --heap: run COMMAND, then name the sites of each profiled process's raw
 * heap report: COMMAND's own to stderr or `output`, any other process's to
 * stderr or OUTPUT.PID.NAME. */
static int run_with_heap_report(char **argv, const char *output)
{
    char dir[PATH_MAX];
    int rc = scratch_make(dir, sizeof dir);
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
    struct timespec since;
    run_start_time(&since);
    int status;
    pid_t pid = *pid_out = run_command(argv, &status);
    *status_out = status;
    if (pid <= 0)
        return 0;
    const char *top = getenv("MEMPROF_TOP"), *filter = getenv("MEMPROF_FILTER");
    struct heap_report_options opt = { top ? strtoul(top, NULL, 10) : 0, filter && *filter ? filter : NULL, NULL };
    char **others;
    size_t n = reports_beside(raw, &since, &others), first = 0;
    size_t raw_len = strlen(raw);
    bool reported;
    const char *proto = *proto_output ? proto_output : NULL;
    int rc = name_heap_report(raw, output, proto, pid, &opt, &reported);
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

/* Ruby: run COMMAND; then say where the reports of other profiled
 * processes are, and whether COMMAND's own process wrote one. */
static int run_with_ruby_report(char **argv, const char *output)
{
    /* --pprof-proto: the runtime also writes its whole table, with bytes. */
    char dir[PATH_MAX], table[PATH_MAX + 8] = "";
    if (*proto_output) {
        int made = scratch_make(dir, sizeof dir);
        if (made)
            return made;
        snprintf(table, sizeof table, "%s/table", dir);
        setenv("MEMPROF_RUBY_TABLE", table, 1);
        setenv("MEMPROF_SCRATCH", table, 1);
    }
    struct timespec since;
    run_start_time(&since);
    int status;
    pid_t pid = run_command(argv, &status);
    int proto_rc = 0;
    if (*table) {
        FILE *in = pid > 0 ? fopen(table, "r") : NULL;
        if (in && fgetc(in) != EOF) {
            rewind(in);
            proto_rc = write_proto(in, proto_output);
        } else if (pid > 0) {
            fprintf(stderr, "memprof: %s (pid %ld) wrote no Ruby table: no profile in %s\n", argv[0], (long)pid,
                    proto_output);
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
    bool heap = false;
    int i = 0;
    for (; i < argc; i++) {
        const char *a = argv[i];
        int taken = take_run_option(argc, argv, &i);
        if (taken == 2)
            return EXIT_USAGE;
        if (taken) {
            heap |= strncmp(a, "--sample-bytes", 14) == 0;   /* sampling is the C heap's */
            continue;
        }
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        } else if (strcmp(a, "--heap") == 0) {
            heap = true;
        } else if (strcmp(a, "--at-peak") == 0) {
            /* The report is the C heap as it was at its peak. */
            setenv("MEMPROF_HEAP_AT_PEAK", "1", 1);
            heap = true;
        } else if (strcmp(a, "--hook") == 0) {
            /* SPEC, as memprof-hook's words; several are joined with ';'. */
            if (i + 1 >= argc || !*argv[i + 1] || strchr(argv[i + 1], ';'))
                return fail("%s needs a hook spec, e.g. --hook 'pool_alloc size=arg1 ptr=ret'", a);
            const char *old = getenv("MEMPROF_HOOKS");
            char *joined = NULL;
            if (asprintf(&joined, "%s%s%s", old && *old ? old : "", old && *old ? ";" : "", argv[++i]) < 0)
                return fail("out of memory");
            setenv("MEMPROF_HOOKS", joined, 1);
            free(joined);
            heap = true;
        } else if (strcmp(a, "--peak-report") == 0) {
            /* The heap at its peak, named into FILE when COMMAND ends (or is killed). */
            if (i + 1 >= argc)
                return fail("%s needs a file name", a);
            int rc = memprof_resolve_output(argv[++i], peak_output, sizeof peak_output);
            if (rc)
                return rc;
            heap = true;
        } else if (strcmp(a, "--timeline") == 0) {
            /* The C heap over time, drawn (FILE.svg) or as a series (FILE.csv). */
            if (i + 1 >= argc)
                return fail("%s needs a file name (FILE.svg or FILE.csv)", a);
            if (!timeline_output_named(argv[i + 1]))
                return fail("--timeline %s: name it FILE.svg (a chart) or FILE.csv (the series)", argv[i + 1]);
            int rc = memprof_resolve_output(argv[++i], timeline_output, sizeof timeline_output);
            if (rc)
                return rc;
            heap = true;
        } else if (strcmp(a, "--pprof-proto") == 0) {
            /* COMMAND's report as pprof's profile.proto, made when it ends. */
            if (i + 1 >= argc)
                return fail("%s needs a file name", a);
            int rc = memprof_resolve_output(argv[++i], proto_output, sizeof proto_output);
            if (rc)
                return rc;
        } else if (strcmp(a, "--dump") == 0 || strcmp(a, "--pprof") == 0) {
            /* FILE written by the runtime at exit (MEMPROF_DUMP, MEMPROF_HEAP_PPROF). */
            if (i + 1 >= argc)
                return fail("%s needs a file name", a);
            char path[PATH_MAX];
            int rc = memprof_resolve_output(argv[++i], path, sizeof path);
            if (rc)
                return rc;
            setenv(strcmp(a, "--dump") == 0 ? "MEMPROF_DUMP" : "MEMPROF_HEAP_PPROF", path, 1);
            heap |= strcmp(a, "--pprof") == 0;
        } else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            if (i + 1 >= argc)
                return fail("%s needs a file name", a);
            output = argv[++i];
        } else if (strncmp(a, "--output=", 9) == 0) {
            output = a + 9;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (a[0] == '-') {
            fail("run: unknown option %s (try 'memprof --help')", a);
            return EXIT_USAGE;
        } else {
            break;
        }
    }
    if (i >= argc) {
        fail("run: no command given (usage: memprof run [-o FILE] -- COMMAND [ARGS...])");
        return EXIT_USAGE;
    }

    for (int k = 0; k < i && !heap; k++)
        if (strcmp(argv[k], "--by-thread") == 0)
            return fail("run: %s needs --heap (rows by thread are for the C heap)", argv[k]);
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
        return run_with_heap_report(&argv[i], output ? output_path : NULL);
    return run_with_ruby_report(&argv[i], output ? output_path : NULL);
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
        { "proto", cmd_proto },
        { "timeline", cmd_timeline },
        { "symbols", cmd_symbols },   { "imports", cmd_imports },   { "symbolize", cmd_symbolize },
        { "heap-table", cmd_heap_table }, { "name-sites", cmd_name_sites },
        { "safe-point", cmd_safe_point }, { "keep", cmd_keep }, { "crash-helper", cmd_crash_helper },
        { "core", cmd_core },
    };
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(cmd, commands[i].name) == 0)
            return commands[i].run(argc - 2, argv + 2);
    fprintf(stderr, "memprof: unknown command '%s' (try 'memprof --help')\n", cmd);
    return EXIT_USAGE;
}
