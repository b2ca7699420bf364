/* memprof crash-helper: what the kernel's core_pattern pipes a dying
 * process's core to (the seeds' last article), keeping the story of the
 * crash in DIR/<time>-<pid>-<name>/:
 *   core (or core.gz)  the core, as it came on stdin (up to a size cap)
 *   info.txt           pid, signal, time, executable, command line, memprof
 *   backtrace.txt      every thread's backtrace, by GDB from the core
 *   report.txt         the report (Ruby objects or the C heap), when memprof's runtime was loaded
 * Directory 0700, files 0600, never through a symbolic link, in a DIR that
 * is root's or the user's own. It runs while the kernel waits for it: any
 * failure is one line (stderr and the system log), the rest of the core is
 * read and dropped, and nothing waits without a limit. */
#include "commands.h"
#include "cli.h"
#include "core/core_notes.h"
#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#define BACKTRACE_SECONDS 60

struct crash {
    const char *dir;
    long pid;
    int signal;
    const char *exe_hint;        /* %E, '/' as '!' */
    bool compress;
    unsigned long long max_core;   /* 0: no cap */
    char path[PATH_MAX];         /* DIR/<time>-<pid>-<name> */
    unsigned long long core_bytes;
    bool truncated;
    char name[64], args[512], exe[PATH_MAX];
    bool runtime_loaded;         /* libmemprof.so among the core's mapped files */
};

static void complain(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void complain(const char *fmt, ...)
{
    char line[PATH_MAX + 256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "memprof: crash-helper: %s\n", line);
    openlog("memprof-crash-helper", LOG_PID, LOG_DAEMON);
    syslog(LOG_ERR, "%s", line);
    closelog();
}

/* Read what is left of the core: the kernel waits until the pipe is read. */
static void drain(void)
{
    char buf[65536];
    while (read(STDIN_FILENO, buf, sizeof buf) > 0) {
    }
}

/* DIR must be a directory (not a link) of root's or the caller's. */
static bool dir_is_safe(const char *dir)
{
    struct stat st;
    if (lstat(dir, &st) != 0) {
        complain("cannot use %s: %s", dir, strerror(errno));
        return false;
    }
    if (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode)) {
        complain("%s is %s, not a directory: refusing it", dir, S_ISLNK(st.st_mode) ? "a symbolic link" : "a file");
        return false;
    }
    if (st.st_uid != 0 && st.st_uid != geteuid()) {
        complain("%s belongs to uid %u, neither root nor you: refusing it", dir, (unsigned)st.st_uid);
        return false;
    }
    if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) {
        complain("%s is writable by anyone: refusing it", dir);
        return false;
    }
    return true;
}

static int create_file(const struct crash *c, const char *name)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/%s", c->path, name);
    return open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
}

static bool write_all(int fd, const void *p, size_t n)
{
    for (size_t done = 0; done < n;) {
        ssize_t w = write(fd, (const char *)p + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        done += (size_t)w;
    }
    return true;
}

/* stdin into `core`, up to the cap; the rest is read and dropped. */
static bool save_core(struct crash *c)
{
    int fd = create_file(c, "core");
    if (fd < 0) {
        complain("cannot create %s/core: %s", c->path, strerror(errno));
        return false;
    }
    char buf[65536];
    ssize_t n;
    bool ok = true;
    while ((n = read(STDIN_FILENO, buf, sizeof buf)) > 0) {
        size_t keep = (size_t)n;
        if (c->max_core && c->core_bytes + keep > c->max_core) {
            keep = (size_t)(c->max_core - c->core_bytes);
            c->truncated = true;
        }
        if (keep && !write_all(fd, buf, keep)) {
            complain("cannot write %s/core: %s", c->path, strerror(errno ? errno : ENOSPC));
            ok = false;
            break;
        }
        c->core_bytes += keep;
        if (c->truncated)
            break;
    }
    if (close(fd) != 0 && ok) {
        complain("cannot write %s/core: %s", c->path, strerror(errno));
        ok = false;
    }
    drain();
    return ok;
}

/* The name, arguments and executable from the core's notes (NT_PRPSINFO,
 * NT_FILE): right even when /proc has forgotten the process. */
static void read_notes(struct crash *c)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/core", c->path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    elf_version(EV_CURRENT);
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    struct core_notes notes = { 0 };
    const char *why;
    if (e && elf_kind(e) == ELF_K_ELF && core_notes_read(e, &notes, &why) == 0) {
        snprintf(c->name, sizeof c->name, "%s", notes.name);
        snprintf(c->args, sizeof c->args, "%s", notes.args);
        /* The first file mapped is the executable. */
        if (!c->exe[0] && notes.mapping_count)
            snprintf(c->exe, sizeof c->exe, "%s", notes.mappings[0].path);
        for (size_t i = 0; i < notes.mapping_count; i++) {
            const char *slash = strrchr(notes.mappings[i].path, '/');
            c->runtime_loaded |= slash && strcmp(slash, "/libmemprof.so") == 0;
        }
    }
    core_notes_free(&notes);
    if (e)
        elf_end(e);
    close(fd);
}

/* Every thread's backtrace, by GDB from the saved core, within a time limit:
 * no auto-loaded scripts (the program is not to be trusted). */
static void write_backtrace(const struct crash *c)
{
    int out = create_file(c, "backtrace.txt");
    if (out < 0)
        return;
    char core[PATH_MAX + 32];
    snprintf(core, sizeof core, "%s/core", c->path);
    pid_t child = fork();
    if (child == 0) {
        dup2(out, STDOUT_FILENO);
        dup2(out, STDERR_FILENO);
        int null = open("/dev/null", O_RDONLY);
        if (null >= 0)
            dup2(null, STDIN_FILENO);
        alarm(BACKTRACE_SECONDS);   /* survives exec: GDB is killed at the limit */
        execlp("gdb", "gdb", "-nx", "-batch", "-iex", "set auto-load off", "-ex", "thread apply all bt",
               c->exe[0] ? c->exe : "", core, (char *)NULL);
        dprintf(out, "memprof: crash-helper: cannot run gdb: %s\n", strerror(errno));
        _exit(127);
    }
    int status;
    if (child > 0)
        while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
        }
    close(out);
}

/* report.txt: the report memprof's runtime kept (Ruby objects, else the C
 * heap), read from the core (`memprof core`), or the line saying why not. */
static void write_report(const struct crash *c)
{
    int fd = create_file(c, "report.txt");
    FILE *out = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!out) {
        if (fd >= 0)
            close(fd);
        return;
    }
    char core[PATH_MAX + 32], why[PATH_MAX + 160];
    snprintf(core, sizeof core, "%s/core", c->path);
    struct core_report_options opt = { .kind = CORE_REPORT_AUTO };
    if (core_report(core, out, &opt, why, sizeof why) != 0)
        fprintf(out, "%s\n", why);
    if (fclose(out) != 0)
        complain("cannot write %s/report.txt: %s", c->path, strerror(errno));
}

/* core -> core.gz, then core removed. */
static bool compress_core(const struct crash *c)
{
    char plain[PATH_MAX + 32], packed[PATH_MAX + 32];
    snprintf(plain, sizeof plain, "%s/core", c->path);
    snprintf(packed, sizeof packed, "%s/core.gz", c->path);
    int in = open(plain, O_RDONLY | O_CLOEXEC), out = create_file(c, "core.gz");
    gzFile gz = out >= 0 ? gzdopen(out, "wb6") : NULL;
    bool ok = in >= 0 && gz;
    char buf[65536];
    ssize_t n;
    while (ok && (n = read(in, buf, sizeof buf)) > 0)
        ok = gzwrite(gz, buf, (unsigned)n) == (int)n;
    if (gz && gzclose(gz) != Z_OK)
        ok = false;
    else if (!gz && out >= 0)
        close(out);
    if (in >= 0)
        close(in);
    if (!ok) {
        complain("cannot write %s: %s (the core is kept uncompressed)", packed, strerror(errno ? errno : ENOSPC));
        unlink(packed);
        return false;
    }
    unlink(plain);
    return true;
}

static void write_info(const struct crash *c, time_t when, bool runtime_loaded)
{
    int fd = create_file(c, "info.txt");
    if (fd < 0) {
        complain("cannot create %s/info.txt: %s", c->path, strerror(errno));
        return;
    }
    char stamp[64];
    strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S %z", localtime(&when));
    const char *abbrev = sigabbrev_np(c->signal);
    dprintf(fd,
            "pid: %ld\nsignal: %d%s%s\ntime: %s\nexecutable: %s\ncommand line: %s\ncore: %s, %llu bytes%s\n"
            "memprof runtime: %s\n",
            c->pid, c->signal, abbrev ? " SIG" : "", abbrev ? abbrev : "", stamp, c->exe[0] ? c->exe : "(unknown)",
            c->args[0] ? c->args : "(unknown)", c->compress ? "core.gz" : "core", c->core_bytes,
            c->truncated ? " (truncated at --max-core-size)" : "", runtime_loaded ? "loaded" : "not loaded");
    if (close(fd) != 0)
        complain("cannot write %s/info.txt: %s", c->path, strerror(errno));
}

/* The core_pattern line for this memprof; set it as root. */
static int install(const char *dir)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = '\0';
    /* The installed helper's name when it is this memprof, else memprof's own. */
    char helper[PATH_MAX];
    bool installed = n > 0 && realpath(MEMPROF_INSTALLED_CRASH_HELPER, helper) && strcmp(helper, self) == 0;
    char line[2 * PATH_MAX];
    if (installed)
        snprintf(line, sizeof line, "|%s --dir %s %%P %%s %%E", MEMPROF_INSTALLED_CRASH_HELPER, dir);
    else
        snprintf(line, sizeof line, "|%s crash-helper --dir %s %%P %%s %%E", n > 0 ? self : "memprof", dir);
    printf("%s\n", line);
    if (strlen(line) > 127)
        fprintf(stderr, "memprof: crash-helper --install: the line is longer than the kernel's 127 bytes: use "
                        "shorter paths\n");
    if (geteuid() != 0) {
        fprintf(stderr, "memprof: crash-helper --install: the kernel's core_pattern is root's to set: as root,\n"
                        "  mkdir -m 0700 -p %s && echo '%s' > /proc/sys/kernel/core_pattern\n", dir, line);
        return 1;
    }
    FILE *f = fopen("/proc/sys/kernel/core_pattern", "w");
    if (!f || fprintf(f, "%s\n", line) < 0 || fclose(f) != 0) {
        fprintf(stderr, "memprof: crash-helper --install: cannot write /proc/sys/kernel/core_pattern: %s\n",
                strerror(errno));
        return 1;
    }
    fprintf(stderr, "memprof: crash-helper installed: the cores of crashing processes go to %s\n", dir);
    return 0;
}

enum { HELPER_DIR, HELPER_COMPRESS, HELPER_MAX_CORE, HELPER_INSTALL };
static const struct cli_option crash_helper_options[] = {
    [HELPER_DIR] = CLI_VALUE("dir", 0, "DIR", "where the crashes go (needed, but with --install: /var/crash/memprof)"),
    [HELPER_COMPRESS] = CLI_FLAG("compress", 0, "keep the core gzipped (core.gz)"),
    [HELPER_MAX_CORE] = CLI_NUMBER("max-core-size", 0, "BYTES", "keep at most BYTES of the core", 1, LONG_MAX),
    [HELPER_INSTALL] = CLI_FLAG("install", 0, "print the kernel.core_pattern line that runs this helper"),
    { 0 },
};
static const struct cli_command crash_helper_command = {
    .name = "crash-helper", .operands = "PID SIGNAL [EXE] < CORE", .max_operands = 3, .operands_end_options = true,
    .summary = "For the kernel's core_pattern: keep a dying process's core (stdin), its backtraces and\n"
               "what it was in DIR/TIME-PID-NAME/ (mode 0700).",
    .options = crash_helper_options,
};

int cmd_crash_helper(int argc, char **argv)
{
    struct crash c = { .dir = NULL };
    bool install_only = false;
    struct cli_args a;
    int k;
    cli_begin(&a, &crash_helper_command, argc, argv);
    while ((k = cli_next(&a)) >= 0) {
        switch (k) {
        case HELPER_DIR: c.dir = a.value; break;
        case HELPER_COMPRESS: c.compress = true; break;
        case HELPER_MAX_CORE: c.max_core = (unsigned long long)a.number; break;
        case HELPER_INSTALL: install_only = true; break;
        }
    }
    if (k != CLI_END) {
        if (k == CLI_ERROR) {   /* said on stderr; the kernel's caller reads syslog */
            openlog("memprof-crash-helper", LOG_PID, LOG_DAEMON);
            syslog(LOG_ERR, "the core_pattern line gives arguments this helper does not take");
            closelog();
        }
        drain();
        return cli_status(k);
    }
    if (install_only)
        return install(c.dir ? c.dir : "/var/crash/memprof");
    if (!c.dir || a.operand_count < 2) {
        complain("needs --dir DIR PID SIGNAL (usage: memprof crash-helper --dir DIR [--compress] "
                 "[--max-core-size BYTES] PID SIGNAL [EXE] < CORE, or --install [--dir DIR])");
        drain();
        return 2;
    }
    argv = a.operands;
    int i = 0;
    c.pid = (pid_t)memprof_whole_number(argv[i], 1, INT_MAX);
    if (c.pid <= 0) {
        complain("'%s' is not a process id", argv[i]);
        drain();
        return 2;
    }
    c.signal = (int)memprof_whole_number(argv[i + 1], 0, 64);
    if (c.signal < 0) {
        complain("'%s' is not a signal number", argv[i + 1]);
        drain();
        return 2;
    }
    if (a.operand_count == 3) {   /* %E: the executable's path with '!' for '/' */
        snprintf(c.exe, sizeof c.exe, "%s", argv[i + 2]);
        for (char *p = c.exe; *p; p++)
            if (*p == '!')
                *p = '/';
    }
    if (!dir_is_safe(c.dir)) {
        drain();
        return 1;
    }
    /* The directory's name: the executable's (%E), else the process's own
     * (/proc/PID/comm, there while the kernel writes the core). */
    const char *base = strrchr(c.exe, '/');
    char name[32] = "";
    if (c.exe[0]) {
        snprintf(name, sizeof name, "%.31s", base ? base + 1 : c.exe);
    } else {
        char comm[64];
        snprintf(comm, sizeof comm, "/proc/%ld/comm", c.pid);
        FILE *f = fopen(comm, "r");
        if (!f || !fgets(name, sizeof name, f))
            snprintf(name, sizeof name, "process");
        if (f)
            fclose(f);
        name[strcspn(name, "\n")] = '\0';
    }
    for (char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.' ||
              *p == '_' || *p == '-'))
            *p = '_';
    time_t now = time(NULL);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", localtime(&now));
    snprintf(c.path, sizeof c.path, "%s/%s-%ld-%s", c.dir, stamp, c.pid, name);
    mode_t old = umask(077);
    int made = mkdir(c.path, 0700);
    umask(old);
    if (made != 0) {
        complain("cannot make %s: %s", c.path, strerror(errno));
        drain();
        return 1;
    }
    bool saved = save_core(&c);
    read_notes(&c);
    if (saved)
        write_backtrace(&c);
    if (saved && c.runtime_loaded)
        write_report(&c);
    if (saved && c.compress && !compress_core(&c))
        c.compress = false;
    write_info(&c, now, c.runtime_loaded);
    return saved ? 0 : 1;
}
