/* ruby_abi.h's thread offsets checked against the running VM (ruby_thread.h
 * says what they are for). Only on a VM whose version they were read from,
 * and only by reading words of structures the check has already proven are
 * what they claim: a layout that does not fit turns the Ruby lines of C
 * blocks off, with one line on stderr, and reads nothing more. */
#include "ruby_thread.h"
#include "../../util/out.h"
#include <string.h>
#include <unistd.h>

enum ruby_layout_state ruby_layout;

static void layout_is_other(const struct ruby_api *api, const char *why)
{
    if (__atomic_exchange_n(&ruby_layout, RUBY_LAYOUT_OTHER, __ATOMIC_ACQ_REL) == RUBY_LAYOUT_OTHER)
        return;
    struct out o;
    char line[256];
    out_init_fd(&o, STDERR_FILENO, line, sizeof line);
    out_str(&o, "memprof: Ruby ");
    out_str(&o, api->ruby_version ? api->ruby_version : "(unknown version)");
    out_str(&o, ": ");
    out_str(&o, why);
    out_str(&o, "; C heap blocks get no Ruby line\n");
    out_finish(&o);
}

void ruby_layout_check(const struct ruby_api *api)
{
    if (__atomic_load_n(&ruby_layout, __ATOMIC_ACQUIRE) != RUBY_LAYOUT_UNKNOWN)
        return;
    if (!api->ruby_version || strncmp(api->ruby_version, RUBY_LAYOUT_VERSION, strlen(RUBY_LAYOUT_VERSION)) != 0) {
        layout_is_other(api, "not a version memprof knows the thread layout of (" RUBY_LAYOUT_VERSION "x)");
        return;
    }
    /* The main thread, once the VM has it and it holds the GVL. The TLS word
     * is the main thread's: nothing frees it before the VM clears
     * main_thread, and this is the main thread. */
    const char *ec = ruby_site_current_ec();
    const char *vm = *(const char *const *)api->ruby_current_vm_ptr;
    const char *ractor = *(const char *const *)api->ruby_single_main_ractor;
    if (!ec || !vm || !ractor)
        return;
    const char *th = ruby_word_at(vm, RUBY_VM_MAIN_THREAD_OFFSET);
    if (!th || ruby_word_at(ractor, RUBY_RACTOR_GVL_OWNER_OFFSET) != th || getpid() != gettid())
        return;   /* not yet (the VM's start), main without the GVL, or not main */
    /* Two structures agree on the main thread: now it may be read. */
    if (ruby_word_at(ractor, RUBY_RACTOR_MAIN_THREAD_OFFSET) != th ||
        ruby_word_at(th, RUBY_THREAD_RACTOR_OFFSET) != ractor ||
        (uintptr_t)ruby_word_at(th, RUBY_THREAD_ID_OFFSET) != cpu_pthread_self() ||
        ruby_word_at(th, RUBY_THREAD_EC_OFFSET) != ec) {
        layout_is_other(api, "its threads are not laid out as memprof expects");
        return;
    }
    __atomic_store_n(&ruby_layout, RUBY_LAYOUT_OK, __ATOMIC_RELEASE);
}
