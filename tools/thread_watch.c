/* memprof threads -p PID: watch a process's threads come and go without
 * GDB, through glibc's libthread_db, as debuggers did before
 * PTRACE_O_TRACECLONE: the threads listed with td_ta_thr_iter, nptl's
 * creation and death events asked for with td_ta_set_event, a breakpoint
 * on each event function (td_ta_event_addr), the event messages read with
 * td_ta_event_getmsg at each stop. When the memprof runtime is loaded, a new
 * thread's creation site comes from its registry (memprof_debugger.h).
 *
 * This file is the proc_service side libthread_db calls back into (reading
 * memory and registers of the stopped process, looking up its symbols) and
 * the ptrace loop. Every thread is attached with PTRACE_SEIZE and
 * PTRACE_O_TRACECLONE, so new threads are traced from their first
 * instruction. Ctrl-C (or the process's end) clears the events, removes the
 * breakpoints and detaches every thread. */
#include "commands.h"
#include "cli.h"
#include "memprof_debugger.h"
#include "objfile/symbolizer.h"
#include "objfile/symbols.h"
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <proc_service.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <thread_db.h>
#include <unistd.h>

/* --- libthread_db, loaded when a watch starts, as debuggers load it --------- */

/* Its functions this file calls, typed by thread_db.h's own prototypes:
 * memprof's other commands start without the library (it must find the
 * proc_service functions below in the program, which exports them:
 * tools/Makefile.am). */
#define THREAD_DB_FUNCTIONS(X)                                                                      \
    X(td_init) X(td_ta_new) X(td_ta_set_event) X(td_ta_clear_event) X(td_ta_event_addr)              \
    X(td_ta_event_getmsg) X(td_ta_thr_iter) X(td_thr_get_info) X(td_thr_event_enable)
static struct {
#define THREAD_DB_SLOT(name) __typeof__(name) *name;
    THREAD_DB_FUNCTIONS(THREAD_DB_SLOT)
} td;

/* NULL, or why it cannot be used. */
static const char *load_thread_db(void)
{
    void *lib = dlopen("libthread_db.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return dlerror();
#define THREAD_DB_LOAD(name)                      \
    if (!(*(void **)&td.name = dlsym(lib, #name))) \
        return dlerror();
    THREAD_DB_FUNCTIONS(THREAD_DB_LOAD)
    return NULL;
}

/* --- the process's objects: symbols by name, addresses by name ------------- */

#define MAX_OBJECTS 256

struct object {
    char path[PATH_MAX];
    uint64_t start, end, bias;
    struct elf_symbols *functions, *data;
    struct symbolizer *names;
    bool tried;
};

struct ps_prochandle {
    pid_t pid;
    struct object objects[MAX_OBJECTS];
    size_t count;
};

/* The load bias: where the first mapping of the file starts, less the
 * page of its first PT_LOAD's address. */
static uint64_t first_load_vaddr(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    Elf64_Ehdr eh;
    uint64_t vaddr = 0;
    if (fd >= 0 && pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh && memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0) {
        for (unsigned i = 0; i < eh.e_phnum; i++) {
            Elf64_Phdr ph;
            if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph)) != (ssize_t)sizeof ph)
                break;
            if (ph.p_type == PT_LOAD) {
                vaddr = ph.p_vaddr & ~(uint64_t)0xfff;
                break;
            }
        }
    }
    if (fd >= 0)
        close(fd);
    return vaddr;
}

/* The file-backed objects mapped now, from /proc/PID/maps. */
static void load_objects(struct ps_prochandle *ph)
{
    char path[64], line[PATH_MAX + 256];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)ph->pid);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) {
        unsigned long long start, end, offset;
        char perms[8], file[PATH_MAX];
        file[0] = '\0';
        if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095[^\n]", &start, &end, perms, &offset, file) < 4 ||
            file[0] != '/')
            continue;
        struct object *o = NULL;
        for (size_t i = 0; i < ph->count; i++)
            if (strcmp(ph->objects[i].path, file) == 0)
                o = &ph->objects[i];
        if (!o) {
            if (ph->count == MAX_OBJECTS || offset != 0)
                continue;
            o = &ph->objects[ph->count++];
            memset(o, 0, sizeof *o);
            snprintf(o->path, sizeof o->path, "%s", file);
            o->start = start;
            o->bias = start - first_load_vaddr(file);
        }
        if (end > o->end)
            o->end = end;
    }
    if (f)
        fclose(f);
}

static void open_symbols(struct object *o)
{
    if (o->tried)
        return;
    o->tried = true;
    char err[PATH_MAX + 128];
    o->functions = elf_symbols_read(o->path, err, sizeof err);
    o->data = elf_symbols_read_data(o->path, err, sizeof err);
    o->names = symbolizer_open(o->path, err, sizeof err);
}

static bool find_in(const struct elf_symbols *s, const char *name, uint64_t *value)
{
    size_t n = s ? elf_symbols_count(s) : 0;
    for (size_t i = 0; i < n; i++) {
        const char *sym;
        uint64_t start, size;
        elf_symbols_get(s, i, &sym, &start, &size);
        if (sym && strcmp(sym, name) == 0) {
            *value = start;
            return true;
        }
    }
    return false;
}

/* The first object (in map order) that defines `name`. The object name
 * libthread_db passes ("libpthread.so.0") is ignored: since glibc 2.34 its
 * symbols live in libc.so.6. */
static bool lookup_symbol(struct ps_prochandle *ph, const char *name, uint64_t *addr)
{
    for (size_t i = 0; i < ph->count; i++) {
        struct object *o = &ph->objects[i];
        open_symbols(o);
        uint64_t value;
        if (find_in(o->data, name, &value) || find_in(o->functions, name, &value)) {
            *addr = value + o->bias;
            return true;
        }
    }
    return false;
}

/* "function (object)" or "file:line function (object)" for a code address. */
static void name_address(struct ps_prochandle *ph, uint64_t addr, char *text, size_t size)
{
    for (size_t i = 0; i < ph->count; i++) {
        struct object *o = &ph->objects[i];
        if (addr < o->start || addr >= o->end)
            continue;
        open_symbols(o);
        struct symbol_info info = { 0 };
        if (o->names)
            symbolizer_lookup(o->names, addr - o->bias, &info);
        info.function = demangle(info.function);
        const char *base = strrchr(o->path, '/');
        base = base ? base + 1 : o->path;
        if (info.function && info.file)
            snprintf(text, size, "%s (%s:%u, %s)", info.function, info.file, info.line, base);
        else if (info.function)
            snprintf(text, size, "%s (%s)", info.function, base);
        else
            snprintf(text, size, "%s+0x%" PRIx64, base, addr - o->bias);
        return;
    }
    snprintf(text, size, "0x%" PRIx64, addr);
}

/* --- proc_service: what libthread_db asks of its client ---------------------- */

ps_err_e ps_pglobal_lookup(struct ps_prochandle *ph, const char *object, const char *name, psaddr_t *addr)
{
    (void)object;
    uint64_t a;
    if (!lookup_symbol(ph, name, &a))
        return PS_NOSYM;
    *addr = (psaddr_t)(uintptr_t)a;
    return PS_OK;
}

ps_err_e ps_pdread(struct ps_prochandle *ph, psaddr_t addr, void *buf, size_t size)
{
    struct iovec local = { buf, size }, remote = { (void *)addr, size };
    return process_vm_readv(ph->pid, &local, 1, &remote, 1, 0) == (ssize_t)size ? PS_OK : PS_ERR;
}

ps_err_e ps_pdwrite(struct ps_prochandle *ph, psaddr_t addr, const void *buf, size_t size)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/mem", (int)ph->pid);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? pwrite(fd, buf, size, (off_t)(uintptr_t)addr) : -1;
    if (fd >= 0)
        close(fd);
    return n == (ssize_t)size ? PS_OK : PS_ERR;
}

ps_err_e ps_lgetregs(struct ps_prochandle *ph, lwpid_t lwp, prgregset_t regs)
{
    (void)ph;
    return ptrace(PTRACE_GETREGS, lwp, NULL, regs) == 0 ? PS_OK : PS_ERR;
}

ps_err_e ps_lsetregs(struct ps_prochandle *ph, lwpid_t lwp, const prgregset_t regs)
{
    (void)ph;
    return ptrace(PTRACE_SETREGS, lwp, NULL, regs) == 0 ? PS_OK : PS_ERR;
}

ps_err_e ps_lgetfpregs(struct ps_prochandle *ph, lwpid_t lwp, prfpregset_t *regs)
{
    (void)ph;
    return ptrace(PTRACE_GETFPREGS, lwp, NULL, regs) == 0 ? PS_OK : PS_ERR;
}

ps_err_e ps_lsetfpregs(struct ps_prochandle *ph, lwpid_t lwp, const prfpregset_t *regs)
{
    (void)ph;
    return ptrace(PTRACE_SETFPREGS, lwp, NULL, regs) == 0 ? PS_OK : PS_ERR;
}

pid_t ps_getpid(struct ps_prochandle *ph)
{
    return ph->pid;
}

/* x86-64: the thread pointer is fs_base (td_ta_map_lwp2thr needs it). */
ps_err_e ps_get_thread_area(struct ps_prochandle *ph, lwpid_t lwp, int idx, void **base)
{
    (void)ph;
    (void)idx;
    struct user_regs_struct regs;
    if (ptrace(PTRACE_GETREGS, lwp, NULL, &regs) != 0)
        return PS_ERR;
    *base = (void *)(uintptr_t)regs.fs_base;
    return PS_OK;
}

/* --- the registry of the memprof runtime, when loaded ------------------------ */

/* The newest record `match` accepts, read from the process; false if none. */
static bool registry_find(struct ps_prochandle *ph, bool (*match)(const struct memprof_thread *, long), long key,
                          struct memprof_thread *out)
{
    uint64_t addr;
    struct memprof_thread_registry head;
    if (!lookup_symbol(ph, "memprof_thread_registry", &addr) ||
        ps_pdread(ph, (psaddr_t)(uintptr_t)addr, &head, offsetof(struct memprof_thread_registry, chunks)) != PS_OK ||
        head.version != MEMPROF_THREAD_RECORD_VERSION || head.record_size != sizeof *out ||
        head.chunk_size != MEMPROF_THREAD_CHUNK)
        return false;
    uint32_t count = head.count < MEMPROF_THREAD_CHUNKS * MEMPROF_THREAD_CHUNK ? head.count
                                                                             : MEMPROF_THREAD_CHUNKS * MEMPROF_THREAD_CHUNK;
    for (uint32_t n = count; n-- > 0;) {
        uint64_t chunk;
        uint64_t slot = addr + offsetof(struct memprof_thread_registry, chunks) + (n / MEMPROF_THREAD_CHUNK) * 8;
        if (ps_pdread(ph, (psaddr_t)(uintptr_t)slot, &chunk, sizeof chunk) != PS_OK || !chunk)
            continue;
        uint64_t at = chunk + (uint64_t)(n % MEMPROF_THREAD_CHUNK) * sizeof *out;
        if (ps_pdread(ph, (psaddr_t)(uintptr_t)at, out, sizeof *out) == PS_OK && match(out, key)) {
            out->site[sizeof out->site - 1] = '\0';
            return true;
        }
    }
    return false;
}

/* A thread being made by `creator` (the create event comes from inside
 * pthread_create, before the new thread runs). */
static bool starting_from(const struct memprof_thread *t, long creator)
{
    return t->state == MEMPROF_THREAD_STARTING && t->creator_tid == creator;
}

static bool with_tid(const struct memprof_thread *t, long tid)
{
    return t->tid == tid && t->state != MEMPROF_THREAD_UNUSED;
}

/* --- the threads, the events, the loop -------------------------------------- */

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

#define MAX_LWPS 65536

struct watch {
    struct ps_prochandle ph;
    td_thragent_t *ta;
    uint64_t bp[2];             /* TD_CREATE, TD_DEATH event functions */
    uint8_t saved[2];
    pid_t lwps[MAX_LWPS];
    size_t lwp_count;
    unsigned long created, exited;
};

static void add_lwp(struct watch *w, pid_t tid)
{
    for (size_t i = 0; i < w->lwp_count; i++)
        if (w->lwps[i] == tid)
            return;
    if (w->lwp_count < MAX_LWPS)
        w->lwps[w->lwp_count++] = tid;
}

static void drop_lwp(struct watch *w, pid_t tid)
{
    for (size_t i = 0; i < w->lwp_count; i++)
        if (w->lwps[i] == tid) {
            w->lwps[i] = w->lwps[--w->lwp_count];
            return;
        }
}

/* Seize every thread of the process (again until no new one appears). */
static int seize_all(struct watch *w)
{
    for (bool grew = true; grew;) {
        grew = false;
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/task", (int)w->ph.pid);
        DIR *dir = opendir(path);
        if (!dir)
            return errno;
        struct dirent *d;
        while ((d = readdir(dir))) {
            pid_t tid = (pid_t)strtol(d->d_name, NULL, 10);
            bool known = false;
            for (size_t i = 0; i < w->lwp_count; i++)
                known |= w->lwps[i] == tid;
            if (tid <= 0 || known)
                continue;
            if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)(uintptr_t)PTRACE_O_TRACECLONE) != 0) {
                int err = errno;
                if (err == ESRCH)
                    continue;   /* it ended meanwhile */
                closedir(dir);
                return err;
            }
            ptrace(PTRACE_INTERRUPT, tid, NULL, NULL);
            int status;
            waitpid(tid, &status, __WALL);
            add_lwp(w, tid);
            grew = true;
        }
        closedir(dir);
    }
    return 0;
}

static int list_thread(const td_thrhandle_t *th, void *data)
{
    struct watch *w = data;
    td_thrinfo_t info;
    if (td.td_thr_get_info(th, &info) != TD_OK)
        return 0;
    td.td_thr_event_enable(th, 1);   /* each thread's own switch: a TD_DEATH needs it */
    char start[PATH_MAX + 64] = "main";
    if (info.ti_startfunc)
        name_address(&w->ph, (uint64_t)(uintptr_t)info.ti_startfunc, start, sizeof start);
    struct memprof_thread r;
    if (registry_find(&w->ph, with_tid, info.ti_lid, &r))
        printf("thread %d running, start routine %s, created at %s\n", (int)info.ti_lid, start, r.site);
    else
        printf("thread %d running, start routine %s\n", (int)info.ti_lid, start);
    return 0;
}

static void report_event(struct watch *w, const td_event_msg_t *msg, pid_t stopped)
{
    td_thrinfo_t info;
    if (td.td_thr_get_info(msg->th_p, &info) != TD_OK)
        return;
    struct memprof_thread r;
    if (msg->event == TD_CREATE) {
        w->created++;
        td.td_thr_event_enable(msg->th_p, 1);   /* new threads do not inherit it */
        char start[PATH_MAX + 64] = "?";
        if (info.ti_startfunc)
            name_address(&w->ph, (uint64_t)(uintptr_t)info.ti_startfunc, start, sizeof start);
        bool known = registry_find(&w->ph, starting_from, stopped, &r);
        if (known) {   /* memprof's own start routine wraps the program's */
            name_address(&w->ph, r.start_routine, start, sizeof start);
            char site[PATH_MAX + 64];
            if (strstr(r.site, "+0x") || strncmp(r.site, "0x", 2) == 0)   /* a C caller: its line, from disk */
                name_address(&w->ph, r.call_site - 1, site, sizeof site);
            else
                snprintf(site, sizeof site, "%s", r.site);
            printf("thread %d created, start routine %s, created at %s\n", (int)info.ti_lid, start, site);
        } else {
            printf("thread %d created, start routine %s\n", (int)info.ti_lid, start);
        }
    } else if (msg->event == TD_DEATH) {
        w->exited++;
        if (registry_find(&w->ph, with_tid, info.ti_lid, &r) && r.state == MEMPROF_THREAD_EXITED)
            printf("thread %d exited: %" PRIu64 " allocations, %" PRIu64 " bytes\n", (int)info.ti_lid, r.allocations,
                   r.allocated_bytes);
        else
            printf("thread %d exited\n", (int)info.ti_lid);
    }
    fflush(stdout);
}

static bool write_byte(struct watch *w, uint64_t addr, uint8_t value)
{
    return ps_pdwrite(&w->ph, (psaddr_t)(uintptr_t)addr, &value, 1) == PS_OK;
}

/* At a breakpoint: read the messages, then return from the event function
 * (a bare `ret` in libc) without running it: rip from the stack. */
static void at_breakpoint(struct watch *w, pid_t tid, struct user_regs_struct *regs)
{
    td_event_msg_t msg;
    while (td.td_ta_event_getmsg(w->ta, &msg) == TD_OK)
        report_event(w, &msg, tid);
    uint64_t ret;
    if (ps_pdread(&w->ph, (psaddr_t)(uintptr_t)regs->rsp, &ret, sizeof ret) == PS_OK) {
        regs->rip = ret;
        regs->rsp += 8;
        ptrace(PTRACE_SETREGS, tid, NULL, regs);
    }
}

/* Stop every thread, undo what was done to the process, detach. */
static void finish(struct watch *w)
{
    for (size_t i = 0; i < w->lwp_count; i++)
        ptrace(PTRACE_INTERRUPT, w->lwps[i], NULL, NULL);
    for (size_t i = 0; i < w->lwp_count; i++) {
        int status;
        pid_t tid = w->lwps[i];
        if (waitpid(tid, &status, __WALL) < 0)
            continue;
        struct user_regs_struct regs;
        if (WIFSTOPPED(status) && WSTOPSIG(status) == SIGTRAP && ptrace(PTRACE_GETREGS, tid, NULL, &regs) == 0 &&
            (regs.rip - 1 == w->bp[0] || regs.rip - 1 == w->bp[1]))
            at_breakpoint(w, tid, &regs);
    }
    td.td_ta_clear_event(w->ta, &(td_thr_events_t){ { ~0u, ~0u } });
    for (int k = 0; k < 2; k++)
        if (w->bp[k])
            write_byte(w, w->bp[k], w->saved[k]);
    for (size_t i = 0; i < w->lwp_count; i++)
        ptrace(PTRACE_DETACH, w->lwps[i], NULL, NULL);
}

static const struct cli_option threads_options[] = {
    CLI_NUMBER("pid", 'p', "PID", "the process to watch (needed)", 1, 1L << 30),
    { 0 },
};
static const struct cli_command threads_command = {
    .name = "threads", .operands = "", .max_operands = 0,
    .summary = "Watch the threads of PID come and go (libthread_db, no GDB): one line per thread\n"
               "created or exited, until it ends or Ctrl-C.",
    .options = threads_options,
};

int cmd_threads(int argc, char **argv)
{
    pid_t pid = 0;
    struct cli_args a;
    int k;
    cli_begin(&a, &threads_command, argc, argv);
    while ((k = cli_next(&a)) >= 0)
        pid = (pid_t)a.number;
    if (k != CLI_END)
        return cli_status(k);
    if (!pid)
        return cli_fail(&threads_command, "no process id (usage: memprof threads -p PID)");
    static struct watch w;
    w.ph.pid = pid;
    if (kill(pid, 0) != 0 && errno == ESRCH) {
        fprintf(stderr, "memprof: no process %d\n", (int)pid);
        return 1;
    }
    struct sigaction sa = { .sa_handler = on_signal };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    const char *why = load_thread_db();
    if (why) {
        fprintf(stderr, "memprof: cannot load libthread_db (glibc's, libc6): %s\n", why);
        return 1;
    }
    int err = seize_all(&w);
    if (err) {
        fprintf(stderr, "memprof: cannot attach to pid %d: %s%s\n", (int)pid, strerror(err),
                err == EPERM ? " (another tracer, a different user, or kernel.yama.ptrace_scope: "
                               "see 'memprof attach')" : "");
        for (size_t i = 0; i < w.lwp_count; i++)
            ptrace(PTRACE_DETACH, w.lwps[i], NULL, NULL);
        return 1;
    }
    load_objects(&w.ph);
    td_err_e te;
    if (td.td_init() != TD_OK || (te = td.td_ta_new(&w.ph, &w.ta)) != TD_OK) {
        fprintf(stderr, "memprof: libthread_db does not know pid %d's threads (is it linked with glibc's "
                        "libc.so.6?)\n", (int)pid);
        for (size_t i = 0; i < w.lwp_count; i++)
            ptrace(PTRACE_DETACH, w.lwps[i], NULL, NULL);
        return 1;
    }
    td_thr_events_t events;
    td_event_emptyset(&events);
    td_event_addset(&events, TD_CREATE);
    td_event_addset(&events, TD_DEATH);
    td.td_ta_set_event(w.ta, &events);
    td_event_e kinds[2] = { TD_CREATE, TD_DEATH };
    for (int k = 0; k < 2; k++) {
        td_notify_t notify;
        uint8_t int3 = 0xcc;
        if (td.td_ta_event_addr(w.ta, kinds[k], &notify) == TD_OK && notify.type == NOTIFY_BPT &&
            ps_pdread(&w.ph, notify.u.bptaddr, &w.saved[k], 1) == PS_OK) {
            w.bp[k] = (uint64_t)(uintptr_t)notify.u.bptaddr;
            write_byte(&w, w.bp[k], int3);
        }
    }
    if (!w.bp[0] || !w.bp[1]) {
        fprintf(stderr, "memprof: pid %d's libc does not report thread events\n", (int)pid);
        finish(&w);
        return 1;
    }
    printf("watching pid %d (%zu threads); Ctrl-C to stop\n", (int)pid, w.lwp_count);
    td.td_ta_thr_iter(w.ta, list_thread, &w, TD_THR_ANY_STATE, TD_THR_LOWEST_PRIORITY, TD_SIGNO_MASK,
                   TD_THR_ANY_USER_FLAGS);
    fflush(stdout);
    for (size_t i = 0; i < w.lwp_count; i++)
        ptrace(PTRACE_CONT, w.lwps[i], NULL, NULL);

    bool gone = false;
    while (!stop_requested && !gone) {
        int status;
        pid_t tid = waitpid(-1, &status, __WALL);
        if (tid < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (WIFEXITED(status) || WIFSIGNALED(status)) {
            drop_lwp(&w, tid);
            gone = tid == pid || w.lwp_count == 0;
            continue;
        }
        if (!WIFSTOPPED(status))
            continue;
        int sig = WSTOPSIG(status), event = status >> 16, inject = 0;
        if (event == PTRACE_EVENT_CLONE) {
            unsigned long child;
            if (ptrace(PTRACE_GETEVENTMSG, tid, NULL, &child) == 0)
                add_lwp(&w, (pid_t)child);
        } else if (event == PTRACE_EVENT_STOP) {
            add_lwp(&w, tid);   /* a new thread's first stop, or a group stop */
        } else if (sig == SIGTRAP) {
            struct user_regs_struct regs;
            if (ptrace(PTRACE_GETREGS, tid, NULL, &regs) == 0 &&
                (regs.rip - 1 == w.bp[0] || regs.rip - 1 == w.bp[1]))
                at_breakpoint(&w, tid, &regs);
            else
                inject = sig;
        } else {
            inject = sig;   /* the program's own signal */
        }
        ptrace(PTRACE_CONT, tid, NULL, (void *)(uintptr_t)inject);
    }
    if (gone) {
        printf("pid %d ended: %lu threads created, %lu exited\n", (int)pid, w.created, w.exited);
        return 0;
    }
    finish(&w);
    printf("detached from pid %d: %lu threads created, %lu exited\n", (int)pid, w.created, w.exited);
    return 0;
}
