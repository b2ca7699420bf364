/* The call scan (arch/x86_64/call_scan.c) against Zydis: for every function
 * in the dynamic symbol tables of the libraries named on the command line
 * (dlopened) and of libc, the calls and jumps to another function's first
 * byte in the same object (the unwind tables' starts) that the decoder's
 * walk finds must all be among the scan's, and the scan's extras (bytes
 * inside other instructions) must stay rare. At every place those calls and
 * jumps go (PLT entries among them), call_scan_plt_slot's reading of the
 * bytes must be the decoder's: a jump through a rip-relative slot, after an
 * endbr64 or not, through the same slot. TAP. */
#include "tap.h"
#include "arch/code_scan.h"
#include "arch/x86_64/decode.h"
#include "objfile/hash.h"
#include "objfile/object.h"
#include "unwind/cfi.h"
#include <dlfcn.h>
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FOUND 4096

struct found { const struct elf_object *o; uintptr_t start, end; uintptr_t targets[MAX_FOUND]; size_t count; };

static bool function_start_elsewhere(const struct found *f, uintptr_t target)
{
    uintptr_t from, to;
    return target >= f->o->start && target < f->o->end && (target < f->start || target >= f->end) &&
           cfi_function_at(target, &from, &to) && from == target;
}

static void note(struct found *f, uintptr_t target)
{
    if (f->count < MAX_FOUND && function_start_elsewhere(f, target))
        f->targets[f->count++] = target;
}

static int scanned(void *ctx, uintptr_t pc, uintptr_t target)
{
    (void)pc;
    note(ctx, target);
    return 0;
}

/* The decoder's answer to call_scan_plt_slot's question. */
static int decoded_plt_slot(uintptr_t pc, uintptr_t *slot)
{
    uint8_t length;
    if (decode_frame_setup((const void *)pc, 16, &length) == FRAME_ENDBR)
        pc += length;
    struct insn in;
    if (!decode_insn((const void *)pc, 16, pc, &in) || in.kind != INSN_JMP_INDIRECT || !in.rip_relative)
        return 0;
    *slot = in.rip_address;
    return 1;
}

static size_t plt_places, plt_entries, plt_wrong;

static void compare_plt_slot(uintptr_t target)
{
    uintptr_t by_bytes = 0, by_decoder = 0;
    int read = call_scan_plt_slot(target, &by_bytes), want = decoded_plt_slot(target, &by_decoder);
    plt_places++;
    plt_entries += want;
    if (read != want || by_bytes != by_decoder) {
        if (plt_wrong++ < 5)
            printf("# at %#lx the bytes say %d (slot %#lx), the decoder %d (slot %#lx)\n", (unsigned long)target, read,
                   (unsigned long)by_bytes, want, (unsigned long)by_decoder);
    }
}

static int decoded(void *ctx, uintptr_t pc, const struct insn *in)
{
    (void)pc;
    const struct found *f = ctx;
    if (in->kind == INSN_CALL_REL32 || in->kind == INSN_JMP_REL32) {
        note(ctx, in->target);
        if (in->target >= f->o->start && in->target + 16 <= f->o->end && (in->target < f->start || in->target >= f->end))
            compare_plt_slot(in->target);
    }
    return 0;
}

static bool has(const struct found *f, uintptr_t target)
{
    for (size_t i = 0; i < f->count; i++)
        if (f->targets[i] == target)
            return true;
    return false;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        ok(dlopen(argv[i], RTLD_LAZY | RTLD_LOCAL) != NULL, "%s loaded", argv[i]);
    static struct elf_object objects[256];
    size_t n = elf_objects_snapshot(objects, 256);
    static struct found by_decoder, by_scan;
    for (size_t k = 0; k < n && k < 256; k++) {
        const struct elf_object *o = &objects[k];
        const char *slash = strrchr(o->name, '/');
        bool named = slash && strncmp(slash, "/libc.so", 8) == 0;
        for (int i = 1; i < argc; i++)
            named |= strcmp(o->name, argv[i]) == 0 || (slash && strcmp(slash, strrchr(argv[i], '/') ? strrchr(argv[i], '/') : argv[i]) == 0);
        if (!named || o->kind != ELF_OBJECT_LIBRARY)
            continue;
        size_t functions = 0, calls = 0, missed = 0, extra = 0;
        plt_places = plt_entries = plt_wrong = 0;
        for (size_t s = 1; s < elf_object_symbol_count(o); s++) {
            const ElfW(Sym) *sym = &o->symtab[s];
            if (sym->st_shndx == SHN_UNDEF || ELF64_ST_TYPE(sym->st_info) != STT_FUNC || !sym->st_size)
                continue;
            uintptr_t start = o->base + sym->st_value, end = start + sym->st_size;
            by_decoder = (struct found){ .o = o, .start = start, .end = end };
            by_scan = (struct found){ .o = o, .start = start, .end = end };
            struct code_range code = { start, sym->st_size };
            if (decode_ranges(&code, 1, 0, decoded, &by_decoder) != 0)
                continue;
            call_scan(start, end, scanned, &by_scan);
            functions++;
            calls += by_decoder.count;
            for (size_t i = 0; i < by_decoder.count; i++)
                if (!has(&by_scan, by_decoder.targets[i])) {
                    if (missed++ < 5)
                        printf("# %s: %s+%#lx calls %#lx, not scanned\n", o->name, elf_object_symbol_name(o, s),
                               0ul, (unsigned long)(by_decoder.targets[i] - o->base));
                }
            for (size_t i = 0; i < by_scan.count; i++)
                if (!has(&by_decoder, by_scan.targets[i]))
                    extra++;
        }
        printf("# %s: %zu functions, %zu calls to functions' starts, %zu more scanned\n", o->name, functions, calls, extra);
        ok(functions > 100 && calls > 100, "%s: functions and calls found", o->name);
        ok(missed == 0, "%s: every call the decoder finds is scanned (%zu missed)", o->name, missed);
        ok(extra * 1000 <= calls, "%s: the scan's extras under 1 in 1000 (%zu of %zu)", o->name, extra, calls);
        ok(plt_wrong == 0 && plt_entries > 10,
           "%s: PLT entries read from their bytes as the decoder reads them (%zu entries among %zu places called, %zu differ)",
           o->name, plt_entries, plt_places, plt_wrong);
    }
    return tap_done();
}
