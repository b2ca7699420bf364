/* The libraries only some commands need, loaded when one of their
 * functions is first called: libdwarf and libdeflate (lines and inlined
 * frames from debug information, for names not yet remembered) and Zydis
 * (reading code: imports, symbols, cores). Loading all three at start cost
 * every invocation about 0.8 ms on a virtual machine (doc/benchmarks.md),
 * `memprof run` too, whose names are usually remembered. The functions
 * below take the libraries' place at link time (the program links them
 * --as-needed, so none is loaded at start); each finds its namesake on its
 * first call. A library that cannot be loaded is said once, in one line,
 * and its functions then fail as they do on bad input. */
#include <Zydis/Zydis.h>
#include <dlfcn.h>
#include <libdeflate.h>
#include <libdwarf.h>
#include <stdbool.h>
#include <stdio.h>

struct library {
    const char *soname, *package;
    void *handle;
    bool failed;
};

static struct library dwarf_library = { LIBDWARF_SONAME, "libdwarf1", NULL, false };
static struct library deflate_library = { LIBDEFLATE_SONAME, "libdeflate0", NULL, false };
static struct library zydis_library = { LIBZYDIS_SONAME, "libzydis4.0", NULL, false };

/* `name` in `lib`, loaded now if it is not yet; NULL if it cannot be. */
static void *find(struct library *lib, const char *name)
{
    void *handle = __atomic_load_n(&lib->handle, __ATOMIC_ACQUIRE);
    if (!handle && !__atomic_load_n(&lib->failed, __ATOMIC_RELAXED)) {
        handle = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
        if (handle) {
            __atomic_store_n(&lib->handle, handle, __ATOMIC_RELEASE);
        } else if (!__atomic_exchange_n(&lib->failed, true, __ATOMIC_RELAXED)) {
            const char *why = dlerror();
            fprintf(stderr, "memprof: cannot load %s (the Debian package %s): %s\n", lib->soname, lib->package,
                    why ? why : "not found");
        }
    }
    return handle ? dlsym(handle, name) : NULL;
}

/* `name`'s namesake in `lib`, found on the first call and kept. */
#define BOUND(lib, name)                                                                      \
    ({                                                                                        \
        static __typeof__(name) *bound_;                                                      \
        __typeof__(name) *f_ = __atomic_load_n(&bound_, __ATOMIC_ACQUIRE);                    \
        if (!f_ && (f_ = (__typeof__(name) *)find(&lib, #name)))                              \
            __atomic_store_n(&bound_, f_, __ATOMIC_RELEASE);                                  \
        f_;                                                                                   \
    })
/* `name` with the library's own declaration (the compiler checks it
 * against `params`), returning `failed` when the library is missing. */
#define FORWARD(lib, failed, ret, name, params, args)                                         \
    ret name params                                                                           \
    {                                                                                         \
        __typeof__(name) *f = BOUND(lib, name);                                               \
        return f ? f args : failed;                                                           \
    }
#define FORWARD_VOID(lib, name, params, args)                                                 \
    void name params                                                                          \
    {                                                                                         \
        __typeof__(name) *f = BOUND(lib, name);                                               \
        if (f)                                                                                \
            f args;                                                                           \
    }

/* libdwarf: every reader starts with dwarf_object_init_b, which fails
 * without the library; the rest are reached only through its handle. */
FORWARD(dwarf_library, DW_DLV_ERROR, int, dwarf_object_init_b,
        (Dwarf_Obj_Access_Interface *a, Dwarf_Handler h, Dwarf_Ptr p, unsigned int g, Dwarf_Debug *d, Dwarf_Error *e),
        (a, h, p, g, d, e))
FORWARD(dwarf_library, DW_DLV_ERROR, int, dwarf_object_finish, (Dwarf_Debug d, Dwarf_Error *e), (d, e))
FORWARD(dwarf_library, DW_DLV_ERROR, int, dwarf_set_de_alloc_flag, (int v), (v))
FORWARD(dwarf_library, DW_DLV_ERROR, int, dwarf_next_cu_header_d,
        (Dwarf_Debug d, Dwarf_Bool info, Dwarf_Unsigned *length, Dwarf_Half *version, Dwarf_Off *abbrev,
         Dwarf_Half *address_size, Dwarf_Half *offset_size, Dwarf_Half *extension_size, Dwarf_Sig8 *signature,
         Dwarf_Unsigned *type_offset, Dwarf_Unsigned *next, Dwarf_Half *type, Dwarf_Error *e),
        (d, info, length, version, abbrev, address_size, offset_size, extension_size, signature, type_offset, next,
         type, e))
FORWARD(dwarf_library, DW_DLV_ERROR, int, dwarf_siblingof_b,
        (Dwarf_Debug d, Dwarf_Die die, Dwarf_Bool info, Dwarf_Die *out, Dwarf_Error *e), (d, die, info, out, e))
FORWARD(dwarf_library, DW_DLV_ERROR, int, dwarf_child, (Dwarf_Die die, Dwarf_Die *out, Dwarf_Error *e), (die, out, e))
FORWARD(dwarf_library, DW_DLV_ERROR, int, dwarf_offdie_b,
        (Dwarf_Debug d, Dwarf_Off off, Dwarf_Bool info, Dwarf_Die *out, Dwarf_Error *e), (d, off, info, out, e))
FORWARD(dwarf_library, DW_DLV_ERROR, int, dwarf_tag, (Dwarf_Die die, Dwarf_Half *tag, Dwarf_Error *e), (die, tag, e))
FORWARD(dwarf_library, DW_DLV_ERROR, int, dwarf_diename, (Dwarf_Die die, char **name, Dwarf_Error *e), (die, name, e))
FORWARD(dwarf_library, DW_DLV_ERROR, int, dwarf_dieoffset, (Dwarf_Die die, Dwarf_Off *off, Dwarf_Error *e), (die, off, e))
FORWARD(dwarf_library, DW_DLV_ERROR, int, dwarf_get_version_of_die, (Dwarf_Die die, Dwarf_Half *version, Dwarf_Half *size),
        (die, version, size))
FORWARD(dwarf_library, DW_DLV_ERROR, int, dwarf_hasattr, (Dwarf_Die die, Dwarf_Half at, Dwarf_Bool *has, Dwarf_Error *e),
        (die, at, has, e))
FORWARD(dwarf_library, DW_DLV_ERROR, int, dwarf_attr, (Dwarf_Die die, Dwarf_Half at, Dwarf_Attribute *out, Dwarf_Error *e),
        (die, at, out, e))
FORWARD(dwarf_library, DW_DLV_ERROR, int, dwarf_whatform, (Dwarf_Attribute a, Dwarf_Half *form, Dwarf_Error *e), (a, form, e))
FORWARD(dwarf_library, DW_DLV_ERROR, int, dwarf_formstring, (Dwarf_Attribute a, char **s, Dwarf_Error *e), (a, s, e))
FORWARD(dwarf_library, DW_DLV_ERROR, int, dwarf_formudata, (Dwarf_Attribute a, Dwarf_Unsigned *u, Dwarf_Error *e), (a, u, e))
FORWARD(dwarf_library, DW_DLV_ERROR, int, dwarf_global_formref, (Dwarf_Attribute a, Dwarf_Off *off, Dwarf_Error *e),
        (a, off, e))
FORWARD(dwarf_library, DW_DLV_ERROR, int, dwarf_lowpc, (Dwarf_Die die, Dwarf_Addr *pc, Dwarf_Error *e), (die, pc, e))
FORWARD(dwarf_library, DW_DLV_ERROR, int, dwarf_highpc_b,
        (Dwarf_Die die, Dwarf_Addr *pc, Dwarf_Half *form, enum Dwarf_Form_Class *class, Dwarf_Error *e),
        (die, pc, form, class, e))
FORWARD(dwarf_library, DW_DLV_ERROR, int, dwarf_get_ranges_b,
        (Dwarf_Debug d, Dwarf_Off off, Dwarf_Die die, Dwarf_Off *real, Dwarf_Ranges **ranges, Dwarf_Signed *count,
         Dwarf_Unsigned *bytes, Dwarf_Error *e),
        (d, off, die, real, ranges, count, bytes, e))
FORWARD_VOID(dwarf_library, dwarf_ranges_dealloc, (Dwarf_Debug d, Dwarf_Ranges *ranges, Dwarf_Signed count),
             (d, ranges, count))
FORWARD(dwarf_library, DW_DLV_ERROR, int, dwarf_rnglists_get_rle_head,
        (Dwarf_Attribute a, Dwarf_Half form, Dwarf_Unsigned value, Dwarf_Rnglists_Head *head, Dwarf_Unsigned *count,
         Dwarf_Unsigned *global_offset, Dwarf_Error *e),
        (a, form, value, head, count, global_offset, e))
FORWARD(dwarf_library, DW_DLV_ERROR, int, dwarf_get_rnglists_entry_fields_a,
        (Dwarf_Rnglists_Head head, Dwarf_Unsigned i, unsigned *entry_len, unsigned *code, Dwarf_Unsigned *raw1,
         Dwarf_Unsigned *raw2, Dwarf_Bool *debug_addr_unavailable, Dwarf_Unsigned *cooked1, Dwarf_Unsigned *cooked2,
         Dwarf_Error *e),
        (head, i, entry_len, code, raw1, raw2, debug_addr_unavailable, cooked1, cooked2, e))
FORWARD(dwarf_library, DW_DLV_ERROR, int, dwarf_dealloc_rnglists_head, (Dwarf_Rnglists_Head head), (head))
FORWARD(dwarf_library, DW_DLV_ERROR, int, dwarf_srcfiles, (Dwarf_Die die, char ***files, Dwarf_Signed *count, Dwarf_Error *e),
        (die, files, count, e))
FORWARD(dwarf_library, DW_DLV_ERROR, int, dwarf_srclines_b,
        (Dwarf_Die die, Dwarf_Unsigned *version, Dwarf_Small *tables, Dwarf_Line_Context *context, Dwarf_Error *e),
        (die, version, tables, context, e))
FORWARD(dwarf_library, DW_DLV_ERROR, int, dwarf_srclines_from_linecontext,
        (Dwarf_Line_Context context, Dwarf_Line **lines, Dwarf_Signed *count, Dwarf_Error *e), (context, lines, count, e))
FORWARD_VOID(dwarf_library, dwarf_srclines_dealloc_b, (Dwarf_Line_Context context), (context))
FORWARD(dwarf_library, DW_DLV_ERROR, int, dwarf_lineaddr, (Dwarf_Line line, Dwarf_Addr *pc, Dwarf_Error *e), (line, pc, e))
FORWARD(dwarf_library, DW_DLV_ERROR, int, dwarf_lineno, (Dwarf_Line line, Dwarf_Unsigned *n, Dwarf_Error *e), (line, n, e))
FORWARD(dwarf_library, DW_DLV_ERROR, int, dwarf_line_srcfileno, (Dwarf_Line line, Dwarf_Unsigned *n, Dwarf_Error *e),
        (line, n, e))
FORWARD(dwarf_library, DW_DLV_ERROR, int, dwarf_lineendsequence, (Dwarf_Line line, Dwarf_Bool *end, Dwarf_Error *e),
        (line, end, e))
FORWARD_VOID(dwarf_library, dwarf_dealloc, (Dwarf_Debug d, void *p, Dwarf_Unsigned type), (d, p, type))

/* libdeflate: no decompressor, as when out of memory. */
FORWARD(deflate_library, NULL, struct libdeflate_decompressor *, libdeflate_alloc_decompressor, (void), ())
FORWARD_VOID(deflate_library, libdeflate_free_decompressor, (struct libdeflate_decompressor *d), (d))
FORWARD(deflate_library, LIBDEFLATE_BAD_DATA, enum libdeflate_result, libdeflate_zlib_decompress,
        (struct libdeflate_decompressor *d, const void *in, size_t in_bytes, void *out, size_t out_room,
         size_t *out_bytes),
        (d, in, in_bytes, out, out_room, out_bytes))

/* Zydis: every decode starts with ZydisDecoderInit, which fails without it. */
FORWARD(zydis_library, ZYAN_STATUS_FAILED, ZyanStatus, ZydisDecoderInit,
        (ZydisDecoder *decoder, ZydisMachineMode mode, ZydisStackWidth width), (decoder, mode, width))
FORWARD(zydis_library, ZYAN_STATUS_FAILED, ZyanStatus, ZydisDecoderEnableMode,
        (ZydisDecoder *decoder, ZydisDecoderMode mode, ZyanBool enabled), (decoder, mode, enabled))
FORWARD(zydis_library, ZYAN_STATUS_FAILED, ZyanStatus, ZydisDecoderDecodeInstruction,
        (const ZydisDecoder *decoder, ZydisDecoderContext *context, const void *buffer, ZyanUSize length,
         ZydisDecodedInstruction *instruction),
        (decoder, context, buffer, length, instruction))
FORWARD(zydis_library, ZYAN_STATUS_FAILED, ZyanStatus, ZydisDecoderDecodeOperands,
        (const ZydisDecoder *decoder, const ZydisDecoderContext *context, const ZydisDecodedInstruction *instruction,
         ZydisDecodedOperand *operands, ZyanU8 count),
        (decoder, context, instruction, operands, count))
FORWARD(zydis_library, ZYAN_STATUS_FAILED, ZyanStatus, ZydisDecoderDecodeFull,
        (const ZydisDecoder *decoder, const void *buffer, ZyanUSize length, ZydisDecodedInstruction *instruction,
         ZydisDecodedOperand operands[ZYDIS_MAX_OPERAND_COUNT]),
        (decoder, buffer, length, instruction, operands))
FORWARD(zydis_library, ZYDIS_REGCLASS_INVALID, ZydisRegisterClass, ZydisRegisterGetClass, (ZydisRegister reg), (reg))
FORWARD(zydis_library, -1, ZyanI8, ZydisRegisterGetId, (ZydisRegister reg), (reg))
