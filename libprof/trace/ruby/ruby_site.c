/* Where an allocation is attributed. The nearest Ruby frame is what
 * ObjectSpace.allocation_sourcefile reports (rb_sourcefile/rb_sourceline);
 * deeper or "user code" sites walk the stack with rb_profile_frames, which
 * neither allocates nor takes a lock. C frames have no path and are skipped:
 * an object made by a C method belongs to the Ruby line that called it. */
#include "ruby_state.h"
#include "../../util/environment.h"
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

/* --- the current instruction's line --------------------------------------
 * An instruction that allocates without calling a method (newarray, newhash,
 * putstring, ...) leaves the frame's saved pc at its own start, and a line is
 * computed from pc - 1: the line of the previous instruction. Ruby's own
 * NEWOBJ hook (gc_event_hook_body) steps the pc forward by one while its
 * hooks run; memprof does the same, so both name the same line.
 *
 * ruby_current_ec lives in libruby's static TLS block, at the same offset
 * from the thread pointer in every thread. */
intptr_t ruby_site_ec_tls_offset;
bool ruby_site_ec_tls_known;

static void find_ec_slot(void)
{
    void *slot = dlsym(RTLD_DEFAULT, "ruby_current_ec");
    intptr_t offset = (intptr_t)slot - (intptr_t)__builtin_thread_pointer();
    /* Static TLS sits just below the thread pointer (x86-64) or just above
     * it (aarch64); anything else (a VM loaded by dlopen into dynamic TLS)
     * is not found this way. */
    ruby_site_ec_tls_offset = offset;
    intptr_t distance = CPU_STATIC_TLS_BELOW_TP ? -offset : offset;
    __atomic_store_n(&ruby_site_ec_tls_known, slot && distance > 0 && distance < ((intptr_t)16 << 20),
                     __ATOMIC_RELEASE);
}

void ruby_site_find_ec(void)
{
    if (!ruby_site_ec_tls_known)
        find_ec_slot();
}

const char *ruby_site_nearest_frame(const char *ec, bool *top, bool *none)
{
    if (!ec)
        return NULL;
    const char *stack = *(const char *const *)(ec + RUBY_EC_VM_STACK_OFFSET);
    size_t words = *(const size_t *)(ec + RUBY_EC_VM_STACK_SIZE_OFFSET);
    const char *cfp = *(const char *const *)(ec + RUBY_EC_CFP_OFFSET);
    if (!stack || !cfp || words > ((size_t)1 << 30))
        return NULL;
    const char *end = stack + words * sizeof(VALUE);
    if (cfp < stack || cfp >= end)
        return NULL;
    /* The frame rb_sourceline reads: the first that is not a C method's. */
    for (const char *frame = cfp; frame + RUBY_CFP_SIZE <= end; frame += RUBY_CFP_SIZE) {
        if (ruby_cfp_is_ruby(frame)) {
            *top = frame == cfp;
            return *(const VALUE *const *)frame ? frame : NULL;   /* a pc, so a line */
        }
    }
    if (none)
        *none = true;
    return NULL;
}

/* Paths that are not the user's own code: the VM's built-in Ruby, the
 * standard library, gems and Debian's Ruby packages. */
static const char *const library_prefixes[] = {
    "<internal:", "/usr/lib/ruby/", "/usr/lib/x86_64-linux-gnu/ruby/",
    "/usr/share/rubygems-integration/", "/usr/lib/x86_64-linux-gnu/rubygems-integration/",
    "/usr/local/lib/site_ruby/", "/usr/local/lib/x86_64-linux-gnu/site_ruby/",
    "/usr/local/lib/ruby/", "/var/lib/gems/",
};
/* MEMPROF_LIBRARY_PATHS: more prefixes, colon-separated, copied at start. */
static char extra_prefixes[4096];

void ruby_site_configure(void)
{
    ruby_site_find_ec();
    const char *env = env_get("MEMPROF_LIBRARY_PATHS");
    size_t n = env ? strlen(env) : 0;
    if (n >= sizeof extra_prefixes)
        n = 0;
    memcpy(extra_prefixes, env ? env : "", n);
    extra_prefixes[n] = '\0';
}

static bool has_prefix(const char *s, const char *prefix, size_t n)
{
    return n > 0 && strncmp(s, prefix, n) == 0;
}

static bool is_library_path(const char *path)
{
    for (size_t i = 0; i < sizeof library_prefixes / sizeof *library_prefixes; i++)
        if (has_prefix(path, library_prefixes[i], strlen(library_prefixes[i])))
            return true;
    if (strstr(path, "/gems/"))
        return true;
    for (const char *p = extra_prefixes; *p;) {
        const char *end = strchrnul(p, ':');
        if (has_prefix(path, p, (size_t)(end - p)))
            return true;
        p = *end ? end + 1 : end;
    }
    return false;
}

/* A frame's path as C text, or NULL for a C frame. */
static const char *frame_path(const struct ruby_api *api, VALUE frame)
{
    volatile VALUE path = api->rb_profile_frame_path(frame);
    if (path == RUBY_QNIL || path == 0 || (path & 7))
        return NULL;
    if ((((const struct ruby_basic *)path)->flags & RUBY_T_MASK) != RUBY_T_STRING)
        return NULL;
    return api->rb_string_value_ptr(&path);
}

static int capture(const struct ruby_tracer *t, struct ruby_frame *frames);

int ruby_site_capture(const struct ruby_tracer *t, struct ruby_frame *frames)
{
    if (!*t->api.ruby_current_vm_ptr)
        return 0;   /* the VM's start-up: no Ruby frame yet */
    const VALUE **pc = ruby_site_running_pc();
    const VALUE *saved = pc ? *pc : NULL;
    if (pc)
        *pc = saved + 1;
    int n = capture(t, frames);
    if (pc)
        *pc = saved;
    return n;
}

static int capture(const struct ruby_tracer *t, struct ruby_frame *frames)
{
    const struct ruby_api *api = &t->api;
    const struct ruby_config *c = &t->config;
    if (c->site == RUBY_SITE_NEAREST && c->frames <= 1) {
        const char *file = api->rb_sourcefile();
        if (!file)
            return 0;
        int line = api->rb_sourceline();
        frames[0] = (struct ruby_frame){ file, line < 0 ? 0 : line };
        return 1;
    }
    enum { SCAN = 256 };
    VALUE raw[SCAN];
    int lines[SCAN];
    int n = api->rb_profile_frames(0, SCAN, raw, lines);
    int found = 0, first_ruby = -1;
    for (int i = 0; i < n && found < c->frames; i++) {
        const char *file = frame_path(api, raw[i]);
        if (!file)
            continue;
        if (first_ruby < 0)
            first_ruby = i;
        if (found == 0 && c->site == RUBY_SITE_USER && is_library_path(file))
            continue;
        frames[found++] = (struct ruby_frame){ file, lines[i] < 0 ? 0 : lines[i] };
    }
    if (found == 0 && first_ruby >= 0) {
        /* No user frame: the library's own nearest frame is the best answer. */
        for (int i = first_ruby; i < n && found < c->frames; i++) {
            const char *file = frame_path(api, raw[i]);
            if (file)
                frames[found++] = (struct ruby_frame){ file, lines[i] < 0 ? 0 : lines[i] };
        }
    }
    return found;
}
