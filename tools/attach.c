/* memprof attach PID: profile a process that is already running.
 *
 * GDB does the work, in batch mode, twice: the first session loads the
 * runtime with the process's own dlopen and starts the tracers
 * (memprof-attach), then detaches; the process runs free while memprof
 * waits (N seconds, or until Ctrl-C); the second session reads the reports,
 * removes every hook (memprof-detach) and detaches. A Ruby report counts
 * what a full GC retains: between the two, a short session asks the runtime
 * for it at the VM's next safe point, where the GC may run, and the process
 * runs until it is written. GDB is attached only
 * for those moments, and runs in a process group of its own so that Ctrl-C
 * reaches memprof, never GDB in the middle of a call into the process. */
#include "commands.h"
#include "cli.h"
#include "output.h"
#include "scratch.h"
#include "memprof.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


static const char *gdbinit_path(void)
{
    const char *env = getenv("MEMPROF_GDBINIT");
    if (env && *env)
        return env;
    return access(MEMPROF_BUILD_GDBINIT, R_OK) == 0 && memprof_in_build_tree() ? MEMPROF_BUILD_GDBINIT
                                                                              : MEMPROF_INSTALLED_GDBINIT;
}

/* A line from /proc/PID/status ("Uid:", "TracerPid:"), its first number. */
static long status_field(pid_t pid, const char *field)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long value = -1;
    size_t n = strlen(field);
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, field, n) == 0) {
            value = strtol(line + n, NULL, 10);
            break;
        }
    if (f)
        fclose(f);
    return value;
}

static int read_ptrace_scope(void)
{
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
    int scope = 0;
    if (f) {
        if (fscanf(f, "%d", &scope) != 1)
            scope = 0;
        fclose(f);
    }
    return scope;
}

/* Whether this process may ptrace `pid`, with a message saying what to
 * change when it may not (checked before GDB says "Operation not permitted"). */
static bool may_trace(pid_t pid)
{
    if (kill(pid, 0) != 0 && errno == ESRCH) {
        fprintf(stderr, "memprof: no process %d\n", (int)pid);
        return false;
    }
    if (pid == getpid() || pid == getppid()) {
        fprintf(stderr, "memprof: cannot attach to pid %d: it is memprof itself or its parent\n", (int)pid);
        return false;
    }
    long tracer = status_field(pid, "TracerPid:");
    if (tracer > 0) {
        fprintf(stderr, "memprof: cannot attach to pid %d: it is already traced by pid %ld (a debugger?); "
                        "detach that one first\n", (int)pid, tracer);
        return false;
    }
    bool root = geteuid() == 0;
    long uid = status_field(pid, "Uid:");
    if (!root && uid >= 0 && uid != (long)geteuid()) {
        fprintf(stderr, "memprof: cannot attach to pid %d: it belongs to uid %ld, not to you; "
                        "run memprof as that user or as root\n", (int)pid, uid);
        return false;
    }
    int scope = read_ptrace_scope();
    if (scope == 3) {
        fprintf(stderr, "memprof: cannot attach to pid %d: kernel.yama.ptrace_scope is 3, which forbids "
                        "attaching to any process until reboot\n", (int)pid);
        return false;
    }
    if (scope == 2 && !root) {
        fprintf(stderr, "memprof: cannot attach to pid %d: kernel.yama.ptrace_scope is 2 (only root may "
                        "attach); run memprof as root\n", (int)pid);
        return false;
    }
    if (scope == 1 && !root) {
        fprintf(stderr, "memprof: cannot attach to pid %d: kernel.yama.ptrace_scope is 1 (a process may "
                        "trace only its own children); run memprof as root, or allow it with "
                        "'sudo sysctl kernel.yama.ptrace_scope=0'\n", (int)pid);
        return false;
    }
    return true;
}

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* How long a GDB session may take before it is interrupted (the `n`th time):
 * MEMPROF_ATTACH_TIMEOUT seconds, 60 by default; then 15 s more each time. */
static int session_seconds(int n)
{
    const char *v = getenv("MEMPROF_ATTACH_TIMEOUT");
    int s = v && *v ? atoi(v) : 60;
    return n ? 15 : s > 0 ? s : 60;
}

/* One line of /proc/PID/task/TID/FILE (stat, comm, wchan) into `line`. */
static void proc_line(pid_t pid, const char *tid, const char *file, char *line, size_t size)
{
    char path[96];
    snprintf(path, sizeof path, "/proc/%d/task/%s/%s", (int)pid, tid, file);
    line[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f) {
        if (!fgets(line, (int)size, f))
            line[0] = '\0';
        fclose(f);
    }
    line[strcspn(line, "\n")] = '\0';
}

/* What a stuck session was doing, for the user's report: GDB's last lines,
 * then each thread of GDB and of the process: its state (R running, S
 * sleeping, t stopped by the tracer) and where the kernel has it waiting. */
static void say_where_stuck(pid_t gdb, pid_t pid, const char *out, size_t len)
{
    size_t from = len, lines = 0;
    while (from > 0 && lines < 6)
        if (out[--from] == '\n')
            lines++;
    fprintf(stderr, "memprof: GDB's last words:\n%.*s\n", (int)(len - from), out + from);
    pid_t whose[2] = { gdb, pid };
    for (int w = 0; w < 2; w++) {
        char dir[64];
        snprintf(dir, sizeof dir, "/proc/%d/task", (int)whose[w]);
        DIR *d = opendir(dir);
        for (struct dirent *e; d && (e = readdir(d));) {
            if (e->d_name[0] == '.')
                continue;
            char stat[512], comm[64], wchan[128];
            proc_line(whose[w], e->d_name, "stat", stat, sizeof stat);
            proc_line(whose[w], e->d_name, "comm", comm, sizeof comm);
            proc_line(whose[w], e->d_name, "wchan", wchan, sizeof wchan);
            const char *state = strrchr(stat, ')');
            fprintf(stderr, "memprof:   %s thread %s \"%s\": state %c, waiting in %s\n", w ? "target" : "GDB",
                    e->d_name, comm, state && state[1] ? state[2] : '?', wchan[0] && strcmp(wchan, "0") ? wchan : "-");
        }
        if (d)
            closedir(d);
    }
}

/* Run GDB in batch mode on `pid` with the commands given; its stdout and
 * stderr into *out (malloc'd). The exit status of GDB, or -1. */
static int run_gdb(pid_t pid, const char *const *commands, size_t n, char **out)
{
    const char *gdb = getenv("MEMPROF_GDB");
    if (!gdb || !*gdb)
        gdb = "gdb";
    char pid_text[32];
    snprintf(pid_text, sizeof pid_text, "%d", (int)pid);
    const char *argv[64];
    size_t argc = 0;
    argv[argc++] = gdb;
    argv[argc++] = "-nx";
    argv[argc++] = "-batch";
    /* The process is held stopped while GDB reads symbols: only those the
     * sessions use (libc's and the loader's for the calls and the safe-point
     * backtraces, the runtime's), and no debug information. Reading every
     * library's, libc6-dbg's DWARF first, held puma 400 ms a session. */
    argv[argc++] = "-readnever";
    argv[argc++] = "-iex";
    argv[argc++] = "set auto-solib-add off";
    /* Before the attach: GDB 13 on a CPU with AMX can call into the process
     * only with the registers memprof.gdbinit chooses before it attaches. */
    argv[argc++] = "-ix";
    argv[argc++] = gdbinit_path();
    argv[argc++] = "-p";
    argv[argc++] = pid_text;
    argv[argc++] = "-ex";
    argv[argc++] = "sharedlibrary /libc[.-]\\|/ld-\\|/libmemprof";
    for (size_t i = 0; i < n && argc + 3 < sizeof argv / sizeof *argv; i++) {
        argv[argc++] = "-ex";
        argv[argc++] = commands[i];
    }
    argv[argc] = NULL;

    int pipefd[2];
    if (pipe(pipefd) != 0)
        return -1;
    pid_t child = fork();
    if (child < 0)
        return -1;
    if (child == 0) {
        setpgid(0, 0);   /* Ctrl-C on the terminal is memprof's, not GDB's */
        dup2(pipefd[1], STDOUT_FILENO);
        dup2(pipefd[1], STDERR_FILENO);
        close(pipefd[0]);
        close(pipefd[1]);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0)
            dup2(devnull, STDIN_FILENO);
        execvp(gdb, (char *const *)argv);
        fprintf(stderr, "memprof: cannot run %s: %s (install the Debian package gdb, or set MEMPROF_GDB)\n",
                gdb, strerror(errno));
        _exit(127);
    }
    close(pipefd[1]);
    int interrupts = 0;
    size_t len = 0, cap = 65536;
    char *buf = malloc(cap);
    ssize_t got;
    while (buf) {
        if (len + 4096 > cap) {
            char *bigger = realloc(buf, cap *= 2);
            if (!bigger) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = bigger;
        }
        /* A session that does not end in time is stuck waiting for the
         * process (a `finish` out of malloc whose return never comes, when
         * the thread blocks first): SIGINT makes GDB stop it, give up the
         * command and detach, its breakpoints removed. */
        struct pollfd ready = { .fd = pipefd[0], .events = POLLIN };
        int left = interrupts < 3 ? session_seconds(interrupts) * 1000 : -1;
        int polled = poll(&ready, 1, left);
        if (polled == 0) {
            if (interrupts == 0) {
                fprintf(stderr, "memprof: GDB is still waiting for pid %d after %d s: interrupting it\n",
                        (int)pid, session_seconds(0));
                say_where_stuck(child, pid, buf, len);
            }
            kill(-child, SIGINT);
            interrupts++;
            continue;
        }
        got = polled < 0 ? -1 : read(pipefd[0], buf + len, cap - len - 1);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        len += (size_t)got;
    }
    close(pipefd[0]);
    int status;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR)
        ;
    if (!buf)
        return -1;
    buf[len] = '\0';
    *out = buf;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The lines of GDB's output that start with "memprof: ", to stderr. */
static void show_messages(const char *text)
{
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        if (strncmp(line, "memprof: ", 9) == 0 || strncmp(line, "ptrace: ", 8) == 0 ||
            strstr(line, "Could not attach"))
            fprintf(stderr, "%.*s\n", (int)n, line);
        line = end ? end + 1 : NULL;
    }
}

/* The text between two marker lines GDB echoed, or NULL. */
static char *between(char *text, const char *begin, const char *end)
{
    char *a = strstr(text, begin);
    if (!a)
        return NULL;
    a += strlen(begin);
    char *b = strstr(a, end);
    if (!b)
        return NULL;
    *b = '\0';
    return a;
}

static int session_status(const char *text)
{
    const char *s = strstr(text, "@memprof-status=");
    return s ? atoi(s + 16) : -1;
}

/* The statuses that pass by themselves (memprof.gdbinit's numbers): a thread
 * inside a memprof hook (2), the Ruby GC running (3), a thread inside malloc
 * or the dynamic loader (12). memprof tries again a moment later, with the
 * process running free meanwhile, rather than wait inside GDB. */
static bool status_passes(int status)
{
    return status == 2 || status == 3 || status == 12;
}

static double seconds_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The time given to attaching, and again to reading the report and
 * detaching, tries included: MEMPROF_ATTACH_TIMEOUT seconds (60). */
static double attach_budget(void)
{
    return session_seconds(0);
}

/* Between two tries: 50 to 250 ms, the process running free, at a time that
 * does not beat with its own period. */
static void pause_between_tries(unsigned try)
{
    unsigned ms = 50 + (unsigned)((getpid() * 7919u + try * 104729u) % 200u);
    poll(NULL, 0, (int)ms);
}

/* Run a GDB session on `pid` again, 50 to 250 ms apart, while its output
 * says to (`again`) and `give_up` has not passed; the last output in *out.
 * False (said on stderr) when GDB could not be run. */
static bool run_gdb_tries(pid_t pid, const char *const *commands, size_t n, bool (*again)(const char *),
                          double give_up, char **out, const char *purpose)
{
    for (unsigned try = 0;; try++) {
        *out = NULL;
        if (run_gdb(pid, commands, n, out) < 0 || !*out) {
            fprintf(stderr, "memprof: could not run GDB on pid %d%s\n", (int)pid, purpose);
            free(*out);
            *out = NULL;
            return false;
        }
        if (!again(*out) || seconds_now() >= give_up)
            return true;
        free(*out);
        pause_between_tries(try);
    }
}

static bool attach_again(const char *text)
{
    return status_passes(session_status(text));
}

/* memprof--detach-if-whole's word: a report is to be read again. */
static bool report_again(const char *text)
{
    return strstr(text, "@memprof-unread") != NULL;
}

/* The line of the GDB output that says why a try did not take (the last one
 * starting with "memprof: "), to stderr when time is up. */
static void say_last_message(const char *text)
{
    const char *last = NULL;
    for (const char *line = text; line && *line;) {
        if (strncmp(line, "memprof: ", 9) == 0)
            last = line;
        const char *end = strchr(line, '\n');
        line = end ? end + 1 : NULL;
    }
    if (last)
        fprintf(stderr, "%.*s\n", (int)strcspn(last, "\n"), last);
}

/* Wait `seconds` (0: until Ctrl-C) or until the process ends. */
static bool wait_for_report(pid_t pid, long seconds)
{
    struct sigaction sa = { .sa_handler = on_interrupt };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (isatty(STDERR_FILENO)) {
        if (seconds)
            fprintf(stderr, "memprof: recording in pid %d; the report in %ld s (Ctrl-C: now)\n", (int)pid, seconds);
        else
            fprintf(stderr, "memprof: recording in pid %d; Ctrl-C for the report\n", (int)pid);
    }
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    while (!interrupted) {
        if (kill(pid, 0) != 0 && errno == ESRCH)
            return false;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (seconds && now.tv_sec - start.tv_sec + (now.tv_nsec - start.tv_nsec) / 1e9 >= (double)seconds)
            break;
        poll(NULL, 0, 50);
    }
    signal(SIGINT, SIG_IGN);   /* the second session must not be cut short */
    signal(SIGTERM, SIG_IGN);
    return true;
}

/* --- the Ruby report after a full GC -------------------------------------- */

/* GDB cannot run the GC wherever it stopped the process: the runtime writes
 * the report at the VM's next safe point (a postponed job) into a scratch
 * directory, and the process runs until it is there. */
struct soon_report {
    char dir[PATH_MAX];
    char path[PATH_MAX + 8];
    bool asked;
    double wait;   /* MEMPROF_ATTACH_GC_WAIT seconds (2; 0: no GC asked for) */
    char *written;   /* what the runtime wrote, once read */
};

/* A path GDB's eval takes as it is: no quote, backslash, percent or space. */
static bool plain_path(const char *path)
{
    return strspn(path, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/._-+") == strlen(path);
}

static void ask_report_soon(pid_t pid, struct soon_report *s)
{
    const char *v = getenv("MEMPROF_ATTACH_GC_WAIT");
    s->asked = false;
    s->wait = v && *v ? strtod(v, NULL) : 2.0;
    if (!(s->wait > 0) || scratch_make(s->dir, sizeof s->dir, (uid_t)status_field(pid, "Uid:")) != 0)
        return;
    snprintf(s->path, sizeof s->path, "%s/ruby", s->dir);
    char ask[sizeof s->path + 64];
    snprintf(ask, sizeof ask, "memprof--report-soon %d %d %s", MEMPROF_REPORT_RUBY, MEMPROF_REPORT_GC, s->path);
    const char *commands[] = { ask, "printf \"@memprof-status=%d\\n\", $memprof_status" };
    char *text = NULL;
    if (plain_path(s->path) && run_gdb(pid, commands, 2, &text) >= 0 && text && session_status(text) == 0) {
        s->asked = true;
        double until = seconds_now() + s->wait;
        struct stat st;
        while (lstat(s->path, &st) != 0 && seconds_now() < until && kill(pid, 0) == 0)
            poll(NULL, 0, 20);
    }
    free(text);
    if (!s->asked)
        scratch_remove(s->dir);
}

/* The file the runtime wrote at the safe point, if the second session's
 * output says it is there, read into s->written; the directory removed. */
static void take_report_soon(const char *session, struct soon_report *s)
{
    if (!s->asked)
        return;
    if (session && strstr(session, "@memprof-soon-written")) {
        int fd = open(s->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
        size_t size = 0;
        FILE *mem = f ? open_memstream(&s->written, &size) : NULL;
        char buf[65536];
        for (size_t n; mem && (n = fread(buf, 1, sizeof buf, f)) > 0;)
            fwrite(buf, 1, n, mem);
        if (mem)
            fclose(mem);
        if (!s->written)
            fprintf(stderr, "memprof: cannot read the report the runtime wrote in %s: %s\n", s->path, strerror(errno));
        if (f)
            fclose(f);
        else if (fd >= 0)
            close(fd);
    }
    scratch_remove(s->dir);
}

/* The Ruby part of the report: the one written at a safe point, or the table
 * read in the session, its header saying why no GC ran. Owned by the caller. */
static char *ruby_report_text(const char *part, struct soon_report *s)
{
    if (!part)
        return NULL;
    if (s->written)
        return strdup(s->written);
    const char *no_gc = "(no GC asked for)";
    const char *at = s->asked ? strstr(part, no_gc) : NULL;
    char *text = NULL;
    if (at && asprintf(&text, "%.*s(the process came to no safe point for a GC in %g s)%s", (int)(at - part), part,
                       s->wait, at + strlen(no_gc)) < 0)
        text = NULL;
    return text ? text : strdup(part);
}

/* The report: Ruby objects and/or the C heap (its sites named), then the
 * threads; into `output` (atomically) or stdout. */
static int write_report(pid_t pid, const char *ruby, const char *heap, const char *threads, const char *output)
{
    struct output out;
    if (output_open(&out, output) != 0)
        return EXIT_FAILED;
    if (ruby)
        fputs(ruby, out.fp);   /* the runtime's table, with its header */
    if (heap) {
        FILE *raw = fmemopen((void *)heap, strlen(heap), "r");
        if (raw) {
            heap_report_symbolize(raw, out.fp, pid, &(struct heap_report_options){ .when = "in" });
            fclose(raw);
        }
    }
    if (threads) {
        fputs("== threads ==\n", out.fp);
        fputs(threads, out.fp);
    }
    return output_close(&out, false) ? EXIT_FAILED : 0;
}

enum { ATTACH_SECONDS, ATTACH_OUTPUT, ATTACH_RUBY, ATTACH_HEAP, ATTACH_ALL, ATTACH_SAMPLE_BYTES };
static const struct cli_option attach_options[] = {
    [ATTACH_SECONDS] = CLI_NUMBER("seconds", 's', "N", "record N seconds, then report (default: until Ctrl-C or SIGTERM)", 1, 86400L * 365),
    [ATTACH_OUTPUT] = CLI_VALUE("output", 'o', "FILE", "write the report to FILE (mode 0600, replaced atomically)"),
    [ATTACH_RUBY] = CLI_FLAG("ruby", 0, "the live Ruby objects (the default for a Ruby process)"),
    [ATTACH_HEAP] = CLI_FLAG("heap", 0, "the live C heap by call site (the default for any other process)"),
    [ATTACH_ALL] = CLI_FLAG("all", 0, "both"),
    [ATTACH_SAMPLE_BYTES] = CLI_NUMBER("sample-bytes", 0, "N", "the C heap, one allocation per N bytes on average", 1, 1L << 40),
    { 0 },
};
static const struct cli_command attach_command = {
    .name = "attach", .operands = "PID", .min_operands = 1, .max_operands = 1,
    .summary = "Profile a running process through GDB: load the runtime, record (--seconds), report\n"
               "(its live Ruby objects, or with --heap the C heap; then its threads), and remove every\n"
               "hook again: the process runs on as it was.",
    .options = attach_options,
};

int cmd_attach(int argc, char **argv)
{
    long seconds = 0;
    const char *output = NULL, *what = "auto";
    long sample_bytes = 0;
    struct cli_args a;
    int k;
    cli_begin(&a, &attach_command, argc, argv);
    while ((k = cli_next(&a)) >= 0) {
        switch (k) {
        case ATTACH_SECONDS: seconds = a.number; break;
        case ATTACH_OUTPUT: output = a.value; break;
        case ATTACH_RUBY: what = "ruby"; break;
        case ATTACH_HEAP: what = "heap"; break;
        case ATTACH_ALL: what = "all"; break;
        case ATTACH_SAMPLE_BYTES: sample_bytes = a.number; break;
        }
    }
    if (k != CLI_END)
        return cli_status(k);
    long n = memprof_whole_number(a.operands[0], 1, 1L << 30);
    if (n < 0)
        return cli_fail(&attach_command, "'%s' is not a process id", a.operands[0]);
    pid_t pid = (pid_t)n;
    char output_path[PATH_MAX];
    if (output) {
        int rc = memprof_resolve_output(output, output_path, sizeof output_path);
        if (rc)
            return rc;
        output = output_path;
    }
    if (!may_trace(pid))
        return EXIT_FAILED;

    if (sample_bytes && strcmp(what, "ruby") == 0)
        return cli_fail(&attach_command, "--sample-bytes samples the C heap: not with --ruby");
    if (sample_bytes && strcmp(what, "auto") == 0)
        what = "heap";   /* sampling is the C heap's */
    char attach_cmd[96];
    if (sample_bytes)
        snprintf(attach_cmd, sizeof attach_cmd, "memprof-attach %s %ld", what, sample_bytes);
    else
        snprintf(attach_cmd, sizeof attach_cmd, "memprof-attach %s", what);
    /* No waiting inside GDB for a thread to leave malloc (a `finish`): the
     * process would be held while that thread runs alone, and a thread that
     * blocks first never comes back. memprof detaches and tries again. */
    const char *first[] = {
        "set $memprof_wait_safe_point = 0", attach_cmd,
        "printf \"@memprof-status=%d\\n\", $memprof_status",
    };
    char *text;
    if (!run_gdb_tries(pid, first, sizeof first / sizeof *first, attach_again, seconds_now() + attach_budget(),
                       &text, ""))
        return EXIT_FAILED;
    int rc, status = session_status(text);
    if (status != 0) {
        if (status_passes(status))
            fprintf(stderr, "memprof: pid %d was never at a point where memprof could attach in %.0f s; the last try said:\n",
                    (int)pid, attach_budget());
        if (strstr(text, "ptrace: Operation not permitted"))
            fprintf(stderr, "memprof: cannot attach to pid %d: ptrace is not permitted (another tracer, a "
                            "container without CAP_SYS_PTRACE, or kernel.yama.ptrace_scope)\n", (int)pid);
        show_messages(text);
        if (status < 0 && !strstr(text, "memprof: "))
            fprintf(stderr, "memprof: GDB could not attach to pid %d:\n%s", (int)pid, text);
        free(text);
        return EXIT_FAILED;
    }
    bool ruby = strstr(text, "recording Ruby objects") != NULL;
    bool heap = strstr(text, "the C heap") != NULL;
    free(text);

    if (!wait_for_report(pid, seconds)) {
        fprintf(stderr, "memprof: pid %d ended before the report\n", (int)pid);
        return EXIT_FAILED;
    }

    struct soon_report soon = { .asked = false, .written = NULL };
    if (ruby)
        ask_report_soon(pid, &soon);
    /* The reports, then the detach; a report the GC or a hook kept from
     * being read now is read again a moment later, the hooks still in, until
     * the time is up: then detached all the same, and the report says why. */
    const char *second[] = {
        "set $memprof_read_whole = 1",
        "echo @memprof-ruby\\n",
        !ruby ? "echo" : soon.asked ? "memprof--ruby-report-after-soon" : "memprof-info",
        ruby && !soon.asked ? "memprof--read-whole" : "echo",
        "echo @memprof-heap\\n", heap ? "memprof--report $memprof_report_heap 0 0 0" : "echo",
        heap ? "memprof--read-whole" : "echo",
        "echo @memprof-threads\\n", "memprof-threads", "echo @memprof-end\\n",
        "memprof--detach-if-whole", "printf \"@memprof-status=%d\\n\", $memprof_status",
    };
    const char *last[] = { "memprof-detach", "printf \"@memprof-status=%d\\n\", $memprof_status" };
    char *report;
    if (!run_gdb_tries(pid, second, sizeof second / sizeof *second, report_again, seconds_now() + attach_budget(),
                       &report, " for the report")) {
        take_report_soon(NULL, &soon);
        return EXIT_FAILED;
    }
    take_report_soon(report, &soon);
    if (report_again(report)) {
        fprintf(stderr, "memprof: the report of pid %d could not be read whole in %.0f s; the last try said:\n",
                (int)pid, attach_budget());
        say_last_message(report);
        char *detached = NULL;   /* busy while a thread stopped in a hook holds the tables: again */
        bool gone = run_gdb_tries(pid, last, sizeof last / sizeof *last, attach_again, seconds_now() + 10,
                                  &detached, " to detach") &&
                    session_status(detached) == 0;
        free(detached);
        if (!gone) {
            fprintf(stderr, "memprof: the hooks in pid %d could not all be removed\n", (int)pid);
            free(report);
            return EXIT_FAILED;
        }
    }
    bool whole = strstr(report, "@memprof-detached=1") != NULL;
    if (!whole && !report_again(report)) {
        show_messages(report);
        fprintf(stderr, "memprof: the hooks in pid %d could not all be removed\n", (int)pid);
        free(report);
        return EXIT_FAILED;
    }
    /* The last part first: each cut ends the part before it. */
    char *threads_report = between(report, "@memprof-threads\n", "@memprof-end\n");
    char *heap_report = heap ? between(report, "@memprof-heap\n", "@memprof-threads\n") : NULL;
    char *ruby_part = ruby_report_text(ruby ? between(report, "@memprof-ruby\n", "@memprof-heap\n") : NULL, &soon);
    rc = write_report(pid, ruby_part, heap_report, threads_report, output);
    free(ruby_part);
    free(soon.written);
    free(report);
    if (rc == 0 && !whole)
        rc = EXIT_FAILED;   /* the report says what could not be read */
    if (rc == 0 && isatty(STDERR_FILENO))
        fprintf(stderr, "memprof: detached from pid %d; every hook removed\n", (int)pid);
    return rc;
}
