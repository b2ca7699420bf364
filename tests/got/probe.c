/* Preloaded into the GOT test programs: drives memprof's hook core (linked in
 * statically, so this object is "the runtime itself" and is never patched). */
#include "probe.h"
#include "objfile/hash.h"
#include "objfile/object.h"
#include "objfile/reloc.h"
#include "hook/got.h"
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

static int (*next_a)(int, int), (*next_b)(int, int), (*next_c)(int, int), (*next_missing)(void);
static long calls[3];
static char trail[8];
static size_t trail_len;

static void note(char c)
{
    if (trail_len < sizeof trail - 1)
        trail[trail_len++] = c;
    trail[trail_len] = '\0';
}

static int hook_a(int x, int y)
{
    calls[PROBE_A]++;
    note('A');
    return next_a(x, y);
}

static int hook_b(int x, int y)
{
    calls[PROBE_B]++;
    note('B');
    return next_b(x, y);
}

static int hook_c(int x, int y)
{
    calls[PROBE_C]++;
    note('C');
    return next_c(x, y);
}

/* Hook A's second entry (got_hook_retarget), noted 'a'. */
static int hook_a_second(int x, int y)
{
    calls[PROBE_A]++;
    note('a');
    return next_a(x, y);
}

static void hook_missing(void)
{
}

static struct got_hook hooks[2] = {
    { .symbol = "target_add", .replacement = (void *)hook_a, .next = (void **)&next_a },
    { .symbol = "target_add", .replacement = (void *)hook_b, .next = (void **)&next_b },
};

EXPORT int probe_hook(int which)
{
    return got_hook_install(&hooks[which]);
}

EXPORT void probe_unhook(int which)
{
    got_hook_remove(&hooks[which]);
}

EXPORT int probe_retarget(int which, int second)
{
    void *entry = which == PROBE_A ? (second ? (void *)hook_a_second : (void *)hook_a)
                                   : (void *)hook_b;
    return got_hook_retarget(&hooks[which], entry);
}

/* A batch whose second hook names a function no object defines. */
static struct got_hook batch[2] = {
    { .symbol = "target_add", .replacement = (void *)hook_c, .next = (void **)&next_c },
    { .symbol = "memprof_no_such_function", .replacement = (void *)hook_missing, .next = (void **)&next_missing },
};

EXPORT int probe_hook_batch(size_t n)
{
    return got_hooks_install(batch, n);
}

EXPORT void probe_unhook_batch(size_t n)
{
    got_hooks_remove(batch, n);
}

EXPORT long probe_calls(int which)
{
    return calls[which];
}

EXPORT const char *probe_trail(void)
{
    static char last[8];
    memcpy(last, trail, sizeof last);
    trail_len = 0;
    trail[0] = '\0';
    return last;
}

EXPORT size_t probe_patched(void)
{
    return got_patched_slot_count();
}

struct collect {
    const char *symbol;
    struct probe_slot *out;
    size_t max, n;
};

static int collect_slot(const struct elf_object *obj, const char *name, uintptr_t *slot,
                        enum elf_slot_kind kind, void *ctx)
{
    (void)kind;
    struct collect *c = ctx;
    if (strcmp(name, c->symbol) == 0 && c->n < c->max)
        c->out[c->n++] = (struct probe_slot){ slot, *slot, obj->start, obj->end, obj->name };
    return 0;
}

EXPORT size_t probe_slots(const char *symbol, struct probe_slot *out, size_t max)
{
    struct elf_object objs[256];
    size_t n = elf_objects_snapshot(objs, 256);
    struct collect c = { symbol, out, max, 0 };
    for (size_t i = 0; i < n && i < 256; i++)
        if (objs[i].kind == ELF_OBJECT_PROGRAM || objs[i].kind == ELF_OBJECT_LIBRARY)
            elf_object_each_slot(&objs[i], collect_slot, &c);
    return c.n;
}

EXPORT uintptr_t probe_lookup(const char *symbol, const char **hash_kind)
{
    struct elf_object objs[256];
    size_t n = elf_objects_snapshot(objs, 256);
    for (size_t i = 0; i < n && i < 256; i++) {
        uintptr_t addr = elf_object_symbol_address(&objs[i], symbol);
        if (addr) {
            *hash_kind = objs[i].gnu_hash ? "gnu" : objs[i].sysv_hash ? "sysv" : "none";
            return addr;
        }
    }
    return 0;
}

/* An independent count: JUMP_SLOT and GLOB_DAT relocations naming `symbol`
 * in the file's SHT_RELA sections, read with libelf. */
EXPORT long probe_file_slots(const char *path, const char *symbol)
{
    elf_version(EV_CURRENT);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    long count = e ? 0 : -1;
    for (Elf_Scn *scn = NULL; e && (scn = elf_nextscn(e, scn));) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA)
            continue;
        Elf_Scn *symscn = elf_getscn(e, sh.sh_link);
        GElf_Shdr symsh;
        Elf_Data *rel = elf_getdata(scn, NULL), *syms = symscn ? elf_getdata(symscn, NULL) : NULL;
        if (!rel || !syms || !gelf_getshdr(symscn, &symsh))
            continue;
        for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
            GElf_Rela r;
            GElf_Sym s;
            if (!gelf_getrela(rel, (int)i, &r))
                continue;
            unsigned type = (unsigned)GELF_R_TYPE(r.r_info);
            if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
                continue;
            if (!gelf_getsym(syms, (int)GELF_R_SYM(r.r_info), &s))
                continue;
            const char *name = elf_strptr(e, symsh.sh_link, s.st_name);
            if (name && strcmp(name, symbol) == 0)
                count++;
        }
    }
    if (e)
        elf_end(e);
    close(fd);
    return count;
}
