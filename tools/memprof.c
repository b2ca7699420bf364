/* memprof: the command-line companion.
 *
 *   memprof run [-o FILE] [--] CMD [ARGS...]
 *
 * `run` execs CMD with the runtime preloaded, so CMD's exit status and signals
 * are its own; the runtime writes the report when CMD exits. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
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
    fputs("usage: memprof run [-o FILE] [--] COMMAND [ARGS...]\n"
          "       memprof --help | --version\n"
          "\n"
          "Commands:\n"
          "  run      run COMMAND with the memprof runtime preloaded; when it exits,\n"
          "           print the live Ruby objects by file:line:Class (to stderr, or to FILE)\n"
          "\n"
          "Options for run:\n"
          "  -o, --output FILE   write the report to FILE (mode 0600, replaced atomically;\n"
          "                      %p in FILE becomes the process id)\n"
          "\n"
          "Exit status: COMMAND's own; 2 for a usage error or an unusable -o FILE;\n"
          "126 if COMMAND cannot be executed; 127 if it is not found.\n"
          "Environment: see 'man memprof' or doc/manual.md (MEMPROF_START, MEMPROF_OUTPUT).\n",
          f);
}

static int fail(const char *fmt, const char *arg, const char *detail)
{
    fputs("memprof: ", stderr);
    fprintf(stderr, fmt, arg);
    if (detail)
        fprintf(stderr, ": %s", detail);
    fputc('\n', stderr);
    return EXIT_USAGE;
}

/* The runtime beside this binary in the build tree, else the installed one. */
static const char *runtime_path(void)
{
    const char *env = getenv("MEMPROF_RUNTIME");
    if (env && *env)
        return env;
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        if (strcmp(dirname(self), MEMPROF_BUILD_TOOLS_DIR) == 0)
            return MEMPROF_BUILD_RUNTIME;
    }
    return MEMPROF_INSTALLED_RUNTIME;
}

/* Check -o FILE before running anything, and make it absolute (CMD may chdir). */
static int resolve_output(const char *spec, char *out, size_t size)
{
    struct stat st;
    if (!*spec)
        return fail("-o needs a file name", "", NULL);
    if (lstat(spec, &st) == 0) {
        if (S_ISLNK(st.st_mode))
            return fail("cannot write the report to %s: it is a symbolic link (refusing to follow it)", spec, NULL);
        if (S_ISDIR(st.st_mode))
            return fail("cannot write the report to %s: it is a directory", spec, NULL);
    }
    char copy[PATH_MAX];
    if (strlen(spec) >= sizeof copy)
        return fail("cannot write the report to %s", spec, strerror(ENAMETOOLONG));
    strcpy(copy, spec);
    const char *base = basename(copy);
    char dir_copy[PATH_MAX];
    strcpy(dir_copy, spec);
    char dir[PATH_MAX];
    if (!realpath(dirname(dir_copy), dir))
        return fail("cannot write the report to %s", spec, strerror(errno));
    /* Create and remove a file there: access(2) says yes to root even on a
     * read-only file system or in /proc. */
    char probe[PATH_MAX + 64];
    snprintf(probe, sizeof probe, "%s/.memprof-probe.%ld", dir, (long)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return fail("cannot write the report to %s", spec, strerror(errno));
    close(fd);
    unlink(probe);
    if ((size_t)snprintf(out, size, "%s/%s", strcmp(dir, "/") ? dir : "", base) >= size)
        return fail("cannot write the report to %s", spec, strerror(ENAMETOOLONG));
    return 0;
}

static int cmd_run(int argc, char **argv)
{
    const char *output = NULL;
    int i = 0;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        } else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            if (i + 1 >= argc)
                return fail("%s needs a file name", a, NULL);
            output = argv[++i];
        } else if (strncmp(a, "--output=", 9) == 0) {
            output = a + 9;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (a[0] == '-') {
            fail("run: unknown option %s (try 'memprof --help')", a, NULL);
            return EXIT_USAGE;
        } else {
            break;
        }
    }
    if (i >= argc) {
        fail("run: no command given (usage: memprof run [-o FILE] -- COMMAND [ARGS...])", "", NULL);
        return EXIT_USAGE;
    }

    char output_path[PATH_MAX];
    if (output) {
        int rc = resolve_output(output, output_path, sizeof output_path);
        if (rc)
            return rc;
    }
    const char *runtime = runtime_path();
    if (access(runtime, R_OK) != 0)
        return fail("runtime not found at %s (set MEMPROF_RUNTIME to its path)", runtime, strerror(errno));

    /* The runtime goes first, before anything the user already preloads. */
    const char *old = getenv("LD_PRELOAD");
    char *preload = NULL;
    if (asprintf(&preload, "%s%s%s", runtime, old && *old ? ":" : "", old && *old ? old : "") < 0)
        return fail("%s", "out of memory", NULL);
    setenv("LD_PRELOAD", preload, 1);
    setenv("MEMPROF_START", "1", 1);
    setenv("MEMPROF_OUTPUT", output ? output_path : "stderr", 1);
    free(preload);

    execvp(argv[i], &argv[i]);
    int err = errno;
    fprintf(stderr, "memprof: cannot run %s: %s\n", argv[i],
            err == ENOENT ? "command not found" : strerror(err));
    return err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC;
}

int main(int argc, char **argv)
{
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
    if (strcmp(cmd, "run") == 0)
        return cmd_run(argc - 2, argv + 2);
    fprintf(stderr, "memprof: unknown command '%s' (try 'memprof --help')\n", cmd);
    return EXIT_USAGE;
}
