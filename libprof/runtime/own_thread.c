#include "own_thread.h"
#include "runtime.h"
#include "../util/own_files.h"
#include "../util/reentry.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define STACK_BYTES (256 * 1024)
#define START_WAIT_MS 2000

static void *run(void *start)
{
    struct own_thread *t = start;
    reentry_enter();   /* whatever this thread does is memprof's: never recorded */
    int err = own_files_unshare(t->give, t->given);
    if (err)
        say("memprof: ", t->what, ": its thread cannot have descriptors of its own: ", strerror(err), (char *)NULL);
    __atomic_store_n(&t->state, err ? -err : 1, __ATOMIC_RELEASE);
    if (!err)
        t->body(t->arg);
    return NULL;
}

/* The thread's word on its table, or ETIMEDOUT. */
static int wait_for_table(struct own_thread *t)
{
    for (unsigned waited_us = 0; waited_us < START_WAIT_MS * 1000u; waited_us += 50) {
        int state = __atomic_load_n(&t->state, __ATOMIC_ACQUIRE);
        if (state)
            return state > 0 ? 0 : -state;
        nanosleep(&(struct timespec){ 0, 50000 }, NULL);
    }
    return ETIMEDOUT;
}

int own_thread_start(struct own_thread *t, const char *name, const char *what, void (*body)(void *arg),
                     void *arg, const int *give, size_t count)
{
    if (count > sizeof t->give / sizeof t->give[0])
        return EINVAL;
    *t = (struct own_thread){ .body = body, .arg = arg, .what = what, .given = count };
    for (size_t i = 0; i < count; i++)
        t->give[i] = give[i];
    /* Created with the program's signals blocked, so none reaches it even
     * before its first instruction; faults still do (a crash is named). */
    sigset_t blocked, was;
    sigfillset(&blocked);
    static const int synchronous[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS };
    for (size_t i = 0; i < sizeof synchronous / sizeof synchronous[0]; i++)
        sigdelset(&blocked, synchronous[i]);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, STACK_BYTES);
    pthread_t thread;
    pthread_sigmask(SIG_SETMASK, &blocked, &was);
    int err = pthread_create(&thread, &attr, run, t);
    pthread_sigmask(SIG_SETMASK, &was, NULL);
    pthread_attr_destroy(&attr);
    if (err) {
        say("memprof: ", what, ": cannot start its thread: ", strerror(err), (char *)NULL);
        return err;
    }
    pthread_setname_np(thread, name);
    if (count == 0)
        return 0;   /* nothing of the program's to close: no need to wait */
    err = wait_for_table(t);
    if (!err)
        for (size_t i = 0; i < count; i++)
            if (give[i] >= 0)
                close(give[i]);
    return err;
}
