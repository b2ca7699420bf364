/* MEMPROF_SERVE=ADDR:PORT: profiles over HTTP, for `go tool pprof` and the
 * agents that scrape Go programs (Pyroscope, Parca, Grafana's).
 *
 * GET /debug/pprof/heap is the C heap (Go's four sample types), GET
 * /debug/pprof/ruby the live Ruby objects (`?gc=1`: after a full GC), each
 * a gzipped profile.proto made on request. One thread of memprof's own
 * listens, answers one client at a time (5 s for each read and write), and
 * blocks every signal; it records nothing (reentry) and takes no lock a
 * hook takes: the C heap's tables are read as a report in another thread
 * reads them, and the Ruby table is written by a postponed job at the VM's
 * next safe point (a Ruby thread, the GVL held), for which it waits 2 s.
 * The runtime writes text; the CLI (`memprof proto`, started with vfork and
 * execve, no LD_PRELOAD) names the sites and encodes the profile, in a
 * directory made for the request (0700) and removed after it: a process
 * that ends by a signal leaves nothing behind. Anything else: 404 or 405.
 * The socket, and every descriptor a request opens, live in the thread's
 * own table (own_files.h): the program may close or reuse any number. */
#include "runtime.h"
#include "own_thread.h"
#include "../memprof_debugger.h"
#include "../trace/heap/heap.h"
#include "../trace/ruby/ruby.h"
#include "../util/reentry.h"
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REQUEST_MAX 8192
#define CLIENT_TIMEOUT_S 5
#define SAFE_POINT_WAIT_MS 2000
#define ENV_BYTES (64 << 10)
#define ENV_ENTRIES 1024

extern char **environ;

static int listen_fd = -1;
static bool listen_fd_shared;    /* in the program's table too: the thread has not its own yet */
static struct sockaddr_storage address;   /* as asked; its port 0 for a forked child's */
static socklen_t address_len;
static char tmp_base[PATH_MAX - 64];   /* TMPDIR at start-up */
static char dir[PATH_MAX];       /* a request's own, for its report and profile */
static char cli[PATH_MAX];
static bool forks_serve;         /* MEMPROF_SERVE_FORKS=1 */
/* The CLI's environment: the program's at start-up, without LD_PRELOAD
 * and memprof's settings (the CLI is not profiled), in storage of our own
 * (the program's environ may change under us). */
static char env_storage[ENV_BYTES];
static char *child_env[ENV_ENTRIES];

/* "[::1]:6060", "0.0.0.0:6060", "127.0.0.1:6060", ":6060" or "6060" (the
 * last two: loopback). False when it is none of those. */
static bool parse_address(const char *spec, struct sockaddr_storage *sa, socklen_t *len)
{
    const char *colon = strrchr(spec, ':');
    const char *port_text = colon ? colon + 1 : spec;
    char *end;
    errno = 0;
    unsigned long port = strtoul(port_text, &end, 10);
    if (!*port_text || *end || errno || port > 65535 || *port_text == '-' || *port_text == '+')
        return false;
    char host[64] = "127.0.0.1";
    size_t host_len = colon ? (size_t)(colon - spec) : 0;
    if (host_len) {
        if (spec[0] == '[' && spec[host_len - 1] == ']')
            spec++, host_len -= 2;
        if (host_len >= sizeof host)
            return false;
        memcpy(host, spec, host_len);
        host[host_len] = '\0';
        if (strcmp(host, "localhost") == 0)
            strcpy(host, "127.0.0.1");
    }
    memset(sa, 0, sizeof *sa);
    struct sockaddr_in *v4 = (struct sockaddr_in *)sa;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)sa;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        *len = sizeof *v4;
        return true;
    }
    if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        *len = sizeof *v6;
        return true;
    }
    return false;
}

/* "http://HOST:PORT" of the socket as bound. */
static void write_url(struct out *o, int fd)
{
    struct sockaddr_storage sa;
    socklen_t len = sizeof sa;
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (getsockname(fd, (struct sockaddr *)&sa, &len) == 0) {
        if (sa.ss_family == AF_INET6) {
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&sa)->sin6_addr, host, sizeof host);
            port = ntohs(((struct sockaddr_in6 *)&sa)->sin6_port);
        } else {
            inet_ntop(AF_INET, &((struct sockaddr_in *)&sa)->sin_addr, host, sizeof host);
            port = ntohs(((struct sockaddr_in *)&sa)->sin_port);
        }
    }
    out_str(o, "http://");
    if (sa.ss_family == AF_INET6)
        out_char(o, '[');
    out_str(o, host);
    if (sa.ss_family == AF_INET6)
        out_char(o, ']');
    out_char(o, ':');
    out_u64(o, port);
}

/* The CLI: MEMPROF_CLI (memprof run sets it), else the build tree's for
 * the build tree's runtime, else the installed one. */
static void find_cli(void)
{
    const char *env = env_get("MEMPROF_CLI");
    Dl_info info;
    const char *path = env && *env ? env
                       : dladdr((void *)find_cli, &info) && info.dli_fname &&
                                 strcmp(info.dli_fname, MEMPROF_BUILD_RUNTIME) == 0
                           ? MEMPROF_BUILD_CLI
                           : MEMPROF_INSTALLED_CLI;
    if (strlen(path) < sizeof cli)
        strcpy(cli, path);
}

static void copy_environment(void)
{
    size_t used = 0, n = 0;
    for (char **e = environ; e && *e && n + 1 < ENV_ENTRIES; e++) {
        size_t len = strlen(*e) + 1;
        if (strncmp(*e, "LD_PRELOAD=", 11) == 0 ||
            (strncmp(*e, "MEMPROF_", 8) == 0 && strncmp(*e, "MEMPROF_NAME_CACHE=", 19) != 0) ||
            used + len > sizeof env_storage)
            continue;
        memcpy(env_storage + used, *e, len);
        child_env[n++] = env_storage + used;
        used += len;
    }
    child_env[n] = NULL;
}

/* dir/NAME into `path`. */
static void path_of(char *path, const char *name)
{
    struct out o;
    out_init_fd(&o, -1, path, PATH_MAX);
    out_str(&o, dir);
    out_char(&o, '/');
    out_str(&o, name);
    out_finish(&o);
}

/* `memprof proto -o OUT IN`, its messages into ERR: 0, or -1. The program
 * may reap children itself (a server's master): a status it took is
 * read from the profile being there. */
static int run_cli(const char *in, const char *out, const char *err)
{
    unlink(out);
    int err_fd = open(err, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (err_fd < 0 || null_fd < 0) {
        if (err_fd >= 0)
            close(err_fd);
        if (null_fd >= 0)
            close(null_fd);
        return -1;
    }
    char *argv[] = { cli, (char *)"proto", (char *)"-o", (char *)out, (char *)in, NULL };
    sigset_t none;
    sigemptyset(&none);
    pid_t pid = vfork();
    if (pid == 0) {
        /* Only what vfork allows: the parent's memory is shared. */
        dup2(null_fd, 0);
        dup2(err_fd, 1);
        dup2(err_fd, 2);
        sigprocmask(SIG_SETMASK, &none, NULL);   /* this thread blocks all; the CLI must not */
        execve(cli, argv, child_env);
        _exit(127);
    }
    close(err_fd);
    close(null_fd);
    if (pid < 0)
        return -1;
    int status;
    pid_t got;
    while ((got = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
        ;
    struct stat st;
    if (got == pid)
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
    return stat(out, &st) == 0 && st.st_size > 0 ? 0 : -1;
}

static void sleep_ms(long ms)
{
    nanosleep(&(struct timespec){ ms / 1000, (ms % 1000) * 1000000L }, NULL);
}

static bool send_all(int fd, const char *data, size_t n)
{
    while (n) {
        ssize_t w = send(fd, data, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        data += w;
        n -= (size_t)w;
    }
    return true;
}

/* A response with a one-line text body. */
static void answer_text(int fd, const char *status, const char *extra_header, const char *line)
{
    char head[512], body[1024];
    struct out b, h;
    out_init_fd(&b, -1, body, sizeof body);
    out_str(&b, line);
    out_char(&b, '\n');
    out_finish(&b);
    out_init_fd(&h, -1, head, sizeof head);
    out_str(&h, "HTTP/1.1 ");
    out_str(&h, status);
    out_str(&h, "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n");
    if (extra_header)
        out_str(&h, extra_header);
    out_str(&h, "Content-Length: ");
    out_u64(&h, strlen(body));
    out_str(&h, "\r\n\r\n");
    out_finish(&h);
    if (send_all(fd, head, strlen(head)))
        send_all(fd, body, strlen(body));
}

/* The profile file as the response. */
static void answer_file(int fd, const char *path, const char *name)
{
    int in = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (in < 0 || fstat(in, &st) != 0) {
        if (in >= 0)
            close(in);
        answer_text(fd, "500 Internal Server Error", NULL, "memprof: the profile made could not be read");
        return;
    }
    char head[512];
    struct out h;
    out_init_fd(&h, -1, head, sizeof head);
    out_str(&h, "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                "Content-Disposition: attachment; filename=\"");
    out_str(&h, name);
    out_str(&h, "\"\r\nConnection: close\r\nContent-Length: ");
    out_u64(&h, (uint64_t)st.st_size);
    out_str(&h, "\r\n\r\n");
    out_finish(&h);
    bool ok = send_all(fd, head, strlen(head));
    char chunk[16384];
    ssize_t n;
    while (ok && (n = read(in, chunk, sizeof chunk)) > 0)
        ok = send_all(fd, chunk, (size_t)n);
    close(in);
}

/* The C heap's raw report into `path`: 0, or -1. */
static int write_heap(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -1;
    /* Sites whose blocks are all freed too: the alloc_* types count them. */
    int status = report_write_quietly(fd, &(struct report_request){ .kind = MEMPROF_REPORT_HEAP,
                                                                     .flags = MEMPROF_REPORT_FREED_SITES });
    return close(fd) == 0 && status == MEMPROF_OK ? 0 : -1;
}

/* The Ruby table, with bytes, written at the VM's next safe point into
 * `path`: 0; or -1 with *why. */
static int write_ruby(const char *path, bool gc, const char **why)
{
    int status = report_soon_from_outside(MEMPROF_REPORT_RUBY, MEMPROF_REPORT_BYTES | (gc ? MEMPROF_REPORT_GC : 0),
                                          path);
    if (status == MEMPROF_BUSY) {
        *why = "memprof: another report asked for at a safe point (memprof attach) is not written yet";
        return -1;
    }
    if (status != MEMPROF_OK) {
        *why = "memprof: no Ruby objects are being recorded in this process";
        return -1;
    }
    for (int waited = 0;; waited += 10) {
        int state = report_soon_state(waited >= SAFE_POINT_WAIT_MS);
        if (state == MEMPROF_SOON_WRITTEN)
            return 0;
        if (state == MEMPROF_SOON_FAILED) {
            *why = "memprof: the Ruby table could not be written";
            return -1;
        }
        if (state == MEMPROF_SOON_QUEUED && waited >= SAFE_POINT_WAIT_MS) {   /* taken back */
            *why = "memprof: the Ruby VM came to no safe point in 2 s (no Ruby code allocated); ask again";
            return -1;
        }
        if (state == MEMPROF_SOON_QUEUED)
            report_soon_ask_again();
        sleep_ms(10);   /* (being written: it ends) */
    }
}

/* The value of `key` in the query ("gc=1&x=y"), or NULL. */
static const char *query_value(const char *query, const char *key, size_t *len)
{
    size_t k = strlen(key);
    for (const char *p = query; p && *p;) {
        const char *end = strchr(p, '&');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n > k && strncmp(p, key, k) == 0 && p[k] == '=') {
            *len = n - k - 1;
            return p + k + 1;
        }
        p = end ? end + 1 : NULL;
    }
    return NULL;
}

static void make_and_send(int fd, bool heap, bool collect, const char *report, const char *profile,
                          const char *err);

static void answer(int fd)
{
    char request[REQUEST_MAX + 1];
    size_t got = 0;
    while (got < REQUEST_MAX) {
        ssize_t n = recv(fd, request + got, REQUEST_MAX - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;   /* gone, or too slow */
        got += (size_t)n;
        request[got] = '\0';
        if (strstr(request, "\r\n\r\n") || strstr(request, "\n\n"))
            break;
    }
    request[got] = '\0';
    char *method_end = strchr(request, ' ');
    char *target = method_end ? method_end + 1 : NULL;
    char *target_end = target ? strchr(target, ' ') : NULL;
    if (!target_end || strncmp(target_end + 1, "HTTP/1.", 7) != 0) {
        answer_text(fd, "400 Bad Request", NULL, "memprof: not an HTTP/1 request");
        return;
    }
    *method_end = *target_end = '\0';
    char *query = strchr(target, '?');
    if (query)
        *query++ = '\0';
    bool heap = strcmp(target, "/debug/pprof/heap") == 0, ruby = strcmp(target, "/debug/pprof/ruby") == 0;
    if (!heap && !ruby) {
        answer_text(fd, "404 Not Found", NULL,
                    "memprof: not here: GET /debug/pprof/heap (the C heap) or /debug/pprof/ruby (Ruby objects)");
        return;
    }
    if (strcmp(request, "GET") != 0) {
        answer_text(fd, "405 Method Not Allowed", "Allow: GET\r\n", "memprof: only GET is answered");
        return;
    }
    size_t len;
    if (query_value(query, "seconds", &len)) {
        answer_text(fd, "400 Bad Request", NULL,
                    "memprof: seconds= is not supported: the profile is of what is live now");
        return;
    }
    const char *gc = query_value(query, "gc", &len);
    bool collect = gc && len == 1 && *gc == '1';
    const char *why = NULL;
    if (heap && !heap_tracer_running())
        why = "memprof: the C heap is not traced in this process (memprof run --heap, MEMPROF_HEAP=1)";
    else if (ruby && !ruby_tracer_running())
        why = "memprof: no Ruby objects are being recorded in this process";
    if (why) {
        answer_text(fd, "404 Not Found", NULL, why);
        return;
    }
    struct out o;
    out_init_fd(&o, -1, dir, sizeof dir);
    out_str(&o, tmp_base);
    out_str(&o, "/memprof-serve-XXXXXX");
    out_finish(&o);
    if (!mkdtemp(dir)) {
        answer_text(fd, "500 Internal Server Error", NULL, "memprof: no directory for the profile in TMPDIR");
        return;
    }
    char report[PATH_MAX], profile[PATH_MAX], err[PATH_MAX];
    path_of(report, "report.txt");
    path_of(profile, "profile.pb.gz");
    path_of(err, "cli.err");
    make_and_send(fd, heap, collect, report, profile, err);
    unlink(report);
    unlink(profile);
    unlink(err);
    rmdir(dir);
}

static void make_and_send(int fd, bool heap, bool collect, const char *report, const char *profile,
                          const char *err)
{
    const char *why = NULL;
    if (heap ? write_heap(report) != 0 : write_ruby(report, collect, &why) != 0) {
        answer_text(fd, "503 Service Unavailable", NULL, why ? why : "memprof: the report could not be written");
        return;
    }
    if (!cli[0] || run_cli(report, profile, err) != 0) {
        char line[PATH_MAX + 128];
        struct out o;
        out_init_fd(&o, -1, line, sizeof line);
        out_str(&o, "memprof: ");
        out_str(&o, cli[0] ? cli : "memprof");
        out_str(&o, " proto could not make the profile (MEMPROF_CLI names the memprof command)");
        out_finish(&o);
        answer_text(fd, "500 Internal Server Error", NULL, line);
        return;
    }
    answer_file(fd, profile, heap ? "heap.pb.gz" : "ruby.pb.gz");
}

static void serve(void *unused)
{
    (void)unused;
    for (;;) {
        int c = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) {
            if (errno == EBADF || errno == EINVAL)
                return;   /* closed (a forked child's) */
            sleep_ms(100);     /* out of descriptors, say: later */
            continue;
        }
        struct timeval t = { CLIENT_TIMEOUT_S, 0 };
        setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &t, sizeof t);
        setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &t, sizeof t);
        answer(c);
        close(c);
    }
}

/* Listen on `sa` and start the thread: false after a line on stderr. */
static bool start_serving(const struct sockaddr_storage *sa, socklen_t len, const char *spec)
{
    struct out o;
    const char *base = env_get("TMPDIR");
    out_init_fd(&o, -1, tmp_base, sizeof tmp_base - 32);
    out_str(&o, base && *base ? base : "/tmp");
    if (out_finish(&o) != 0)
        strcpy(tmp_base, "/tmp");
    int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int on = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (fd < 0 || bind(fd, (const struct sockaddr *)sa, len) != 0 || listen(fd, 16) != 0) {
        int err = errno;
        if (fd >= 0)
            close(fd);
        say("memprof: cannot serve profiles on ", spec, ": ", strerror(err), "; the program runs without it",
            (char *)NULL);
        return false;
    }
    listen_fd = fd;
    listen_fd_shared = true;
    char line[256];
    out_init_fd(&o, -1, line, sizeof line);
    out_str(&o, "memprof: pid ");
    out_u64(&o, (uint64_t)getpid());
    out_str(&o, " serves /debug/pprof/heap and /debug/pprof/ruby on ");
    write_url(&o, listen_fd);
    out_finish(&o);
    /* The socket is the thread's once it has its own table. A thread not
     * yet run keeps it in both. */
    static struct own_thread server;
    int err = own_thread_start(&server, "memprof-serve", "not serving profiles", serve, NULL, &listen_fd, 1);
    listen_fd_shared = err == ETIMEDOUT;
    if (err && err != ETIMEDOUT) {
        close(listen_fd);
        listen_fd = -1;
        return false;   /* the thread said why */
    }
    say(line, (char *)NULL);
    return true;
}

/* A forked child: the parent's socket is the parent's; with
 * MEMPROF_SERVE_FORKS=1 the child serves on a port of its own. */
static void after_fork_in_child(void)
{
    bool entered = reentry_enter();
    if (listen_fd >= 0 && listen_fd_shared)
        close(listen_fd);   /* the child's copy; else the number is the program's */
    listen_fd = -1;
    listen_fd_shared = false;
    if (forks_serve) {
        struct sockaddr_storage sa = address;
        if (sa.ss_family == AF_INET6)
            ((struct sockaddr_in6 *)&sa)->sin6_port = 0;
        else
            ((struct sockaddr_in *)&sa)->sin_port = 0;
        start_serving(&sa, address_len, "a port of its own");
    }
    if (entered)
        reentry_leave();
}

void serve_init(void)
{
    const char *spec = env_get("MEMPROF_SERVE");
    if (!spec || !*spec || strcmp(spec, "none") == 0 || !exit_reports_owner())
        return;   /* in a tree, the first process serves (a forked child: MEMPROF_SERVE_FORKS) */
    if (!parse_address(spec, &address, &address_len)) {
        say("memprof: MEMPROF_SERVE is ADDR:PORT (127.0.0.1:6060, [::1]:6060, :6060), not '", spec,
            "': not serving", (char *)NULL);
        return;
    }
    forks_serve = env_says_yes("MEMPROF_SERVE_FORKS");
    find_cli();
    copy_environment();
    if (start_serving(&address, address_len, spec))
        pthread_atfork(NULL, NULL, after_fork_in_child);
}
