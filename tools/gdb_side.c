/* What GDB's memprof.gdbinit asks of the CLI besides naming sites, kept out
 * of the gdbinit so each can be tested alone:
 *   memprof safe-point [--thread N] < BACKTRACES
 *       is a thread inside malloc or the dynamic loader, where a call into
 *       the process that allocates would deadlock?
 *   memprof keep --dir DIR NAME < TEXT
 *       keep a snapshot in GDB's own directory, for memprof-diff. */
#include "commands.h"
#include "cli.h"
#include "input.h"
#include "util/atomic_file.h"
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Frames in malloc's code or the dynamic loader's, by the names of libc's
 * exported symbols (a stripped libc) or of its debug symbols (libc6-dbg). */
static const char unsafe_function[] =
    "^(_*(libc_|GI_+libc_)*(malloc|free|calloc|realloc|reallocarray|memalign|valloc|pvalloc|"
    "aligned_alloc|posix_memalign|mallinfo2?|mallopt|malloc_[a-z_]+|sysmalloc|tcache_[a-z_]+|"
    "arena_[a-z_0-9]+|int_[a-z_]+|mid_memalign)|_dl_[a-z_]+|dl_[a-z_]+|_?_?dlopen|_?_?dlclose|"
    "_?_?dlsym|dl_iterate_phdr)$";

/* The output of `thread apply all bt` (or of one thread's, with --thread).
 * Exit status: for all threads, the first unsafe thread's number + 1, after
 * a message saying how to get out; for one thread, its outermost unsafe
 * frame's number + 1; 0 when there is none (250 at most: a shell's status). */
static const struct cli_option safe_point_options[] = {
    CLI_NUMBER("thread", 0, "N", "the backtrace is of GDB's thread N alone (`bt` there): the status is its\n"
                        "outermost unsafe frame's number + 1", 1, 1L << 30),
    { 0 },
};
static const struct cli_command safe_point_command = {
    .name = "safe-point", .operands = "< BACKTRACES", .max_operands = 0,
    .summary = "Read GDB's 'thread apply all bt': is a thread inside malloc or the dynamic loader?\n"
               "Exit status: the first such thread's number + 1, 0 for none (GDB's memprof-safe-point).",
    .options = safe_point_options,
};

int cmd_safe_point(int argc, char **argv)
{
    FILE *in = input_stdin();
    long one_thread = -1;
    struct cli_args a;
    int k;
    cli_begin(&a, &safe_point_command, argc, argv);
    while ((k = cli_next(&a)) >= 0)
        one_thread = a.number;
    if (k != CLI_END)
        return cli_status(k);
    regex_t unsafe;
    if (regcomp(&unsafe, unsafe_function, REG_EXTENDED | REG_NOSUB) != 0) {
        fputs("memprof: safe-point: cannot compile the pattern of unsafe functions\n", stderr);
        return 2;
    }
    char line[4096], thread[32] = "?";
    bool hit = false;
    int code = 0;
    while (fgets(line, sizeof line, in)) {
        char first[64] = "", second[512] = "", third[64] = "", fourth[512] = "";
        int words = sscanf(line, "%63s %511s %63s %511s", first, second, third, fourth);
        if (words >= 2 && strcmp(first, "Thread") == 0) {
            if (hit)
                break;   /* the first unsafe thread is known */
            snprintf(thread, sizeof thread, "%s", second);
            continue;
        }
        if (first[0] != '#' || words < 2)
            continue;
        /* "#3  0x00007f... in malloc (...)" or "#0  malloc (...)" */
        const char *function = strncmp(second, "0x", 2) == 0 && strcmp(third, "in") == 0 ? fourth : second;
        if (regexec(&unsafe, function, 0, NULL, 0) != 0)
            continue;
        if (!hit && one_thread < 0)
            printf("memprof: thread %s is inside %s (frame %s): a call into the process now could "
                   "deadlock; let it return first (thread %s, then finish, until it is out) and retry\n",
                   thread, function, first, thread);
        hit = true;
        long number = one_thread < 0 ? strtol(thread, NULL, 10) : strtol(first + 1, NULL, 10);
        code = one_thread < 0 ? (number < 250 ? (int)number + 1 : 250) : (number < 249 ? (int)number + 1 : 250);
    }
    regfree(&unsafe);
    return code;
}

/* Say why nothing was kept (the rest of stdin is read at exit: input.h). */
static int keep_failed(const char *dir, bool made, const char *why, const char *what, int err)
{
    if (made)
        rmdir(dir);
    fprintf(stderr, "memprof: cannot keep the snapshot: %s%s%s\n", why, what ? what : "",
            err ? strerror(err) : "");
    return 1;
}

/* DIR is made with mode 0700, or must already be a directory of this user's
 * with mode 0700 and no symbolic link: whoever owns it could put a link
 * where the file goes. NAME is written whole or not at all. */
static const struct cli_option keep_options[] = {
    CLI_VALUE("dir", 0, "DIR", "the directory (needed): made with mode 0700, or already one of yours with that mode"),
    { 0 },
};
static const struct cli_command keep_command = {
    .name = "keep", .operands = "NAME < TEXT", .min_operands = 1, .max_operands = 1,
    .summary = "Keep stdin as DIR/NAME, written whole or not at all (GDB's memprof-snapshot).",
    .options = keep_options,
};

int cmd_keep(int argc, char **argv)
{
    FILE *in = input_stdin();
    const char *dir = NULL;
    struct cli_args a;
    int k;
    cli_begin(&a, &keep_command, argc, argv);
    while ((k = cli_next(&a)) >= 0)
        dir = a.value;
    if (k != CLI_END)
        return cli_status(k);
    if (!dir)
        return cli_fail(&keep_command, "--dir DIR is needed (usage: memprof keep --dir DIR NAME < TEXT)");
    const char *name = a.operands[0];
    char path[PATH_MAX], why[PATH_MAX + 64];
    if (!*name || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
        snprintf(why, sizeof why, "'%s' is not a file name", name);
        return keep_failed(dir, false, why, NULL, 0);
    }
    bool made = false;
    struct stat st;
    if (lstat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 07777) != 0700) {
            snprintf(why, sizeof why, "%s is not a directory of yours with mode 0700", dir);
            return keep_failed(dir, false, why, NULL, 0);
        }
    } else {
        mode_t old = umask(077);
        int err = mkdir(dir, 0700) == 0 ? 0 : errno;
        umask(old);
        if (err) {
            snprintf(why, sizeof why, "cannot make %s: ", dir);
            return keep_failed(dir, false, why, NULL, err);
        }
        made = true;
    }
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
        return keep_failed(dir, made, "the path is too long", NULL, 0);
    snprintf(why, sizeof why, "cannot write %s: ", path);
    struct atomic_file f;
    int err = atomic_file_open(&f, path);
    if (err)
        return keep_failed(dir, made, why, NULL, err);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) {
        for (size_t done = 0; done < n;) {
            ssize_t w = write(f.fd, buf + done, n - done);
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0) {
                err = errno;
                atomic_file_abort(&f);
                return keep_failed(dir, made, why, NULL, err);
            }
            done += (size_t)w;
        }
    }
    err = ferror(in) ? EIO : atomic_file_commit(&f);
    if (err) {
        if (ferror(in))
            atomic_file_abort(&f);
        return keep_failed(dir, made, why, NULL, err);
    }
    return 0;
}
