/* The symfile memprof registers with GDB's JIT interface for each trampoline
 * pool region, read by plugin/memprof-jit.c (doc/jit-symfile.md).
 *
 * One region, one symfile: a header, the stubs (sorted by address), the
 * frame ranges of every stub, then the names. Every count has its record
 * size beside it and every reference is an index or an offset that a
 * reader checks against the sizes before use. Little-endian, as the target.
 * Version 1. */
#ifndef MEMPROF_HOOK_JIT_SYMFILE_H
#define MEMPROF_HOOK_JIT_SYMFILE_H
#include <stdint.h>

#define JIT_SYMFILE_MAGIC "memprofJ"   /* 8 bytes, no NUL */
#define JIT_SYMFILE_VERSION 1

/* Where the return address of a frame in a stub is. */
enum jit_ra_rule {
    JIT_RA_AT_CFA = 1,      /* at CFA - 8 */
    /* At CFA - 8 when that holds neither 0 nor an address in this stub
     * (a return stub puts the real one back there); otherwise the shadow
     * stack frame whose slot is CFA - 8 has it. */
    JIT_RA_SLOT_OR_SHADOW = 2,
    /* The stub was jumped to from the middle of a function, and goes back to
     * the stub's `resume` address: the caller's frame is that function's,
     * at that address. */
    JIT_RA_RESUME = 3,
};

/* Where the caller's rbp is. */
enum jit_rbp_rule {
    JIT_RBP_SAME = 1,       /* not changed */
    JIT_RBP_AT_CFA = 2,     /* saved at CFA + rbp_offset */
};

enum jit_stub_kind {
    JIT_STUB_ENTRY = 1,     /* the interceptor's entry stub */
    JIT_STUB_FULL_ENTRY = 2,   /* an entry stub that also sees the return */
    JIT_STUB_RETURN = 3,    /* a full stub's return stub */
    JIT_STUB_STORE = 4,     /* a patched store's stub (inline-site hooking) */
};

/* DWARF register numbers of x86-64 used here. */
#define JIT_DWARF_RBP 6
#define JIT_DWARF_RSP 7

struct jit_symfile_header {
    char magic[8];
    uint32_t version;
    uint32_t header_size;          /* sizeof(struct jit_symfile_header) */
    uint32_t total_size;           /* of the whole symfile */
    uint32_t stub_count, stub_size;
    uint32_t range_count, range_size;
    uint32_t strings_size;         /* bytes of NUL-terminated names */
    uint64_t code_start, code_size;   /* the region: every stub lies in it */
    /* Shadow stacks of return addresses, for JIT_RA_SLOT_OR_SHADOW: the
     * target address of the pointer to the first (0: none), and their
     * layout. A shadow stack: a next pointer at shadow_next, a 64-bit depth
     * at shadow_depth, frames from shadow_frames; a frame is
     * shadow_frame_size bytes with the slot and the return address as
     * 64-bit words at shadow_slot and shadow_return_to. */
    uint64_t shadow_list;
    uint32_t shadow_next, shadow_depth, shadow_frames, shadow_capacity;
    uint32_t shadow_frame_size, shadow_slot, shadow_return_to, reserved;
    /* The region's first 16 bytes in the target are POOL_REGION_MAGIC and
     * this cookie: a reader checks them before it trusts the symfile for a
     * frame (the addresses of an exited process's region may hold other
     * code in the next one). */
    uint64_t region_cookie;
};

struct jit_symfile_stub {
    uint64_t start;                /* target address */
    uint32_t size;                 /* bytes of code */
    uint32_t name;                 /* offset of its name in the strings */
    uint32_t first_range, range_count;   /* its frame ranges, in order */
    uint32_t kind;                 /* enum jit_stub_kind */
    uint32_t reserved;
    uint64_t resume;               /* for JIT_RA_RESUME: where the stub goes back to */
};

/* The frame at offsets [start, end) of a stub: the CFA (the caller's rsp)
 * is cfa_reg + cfa_offset. rbx, r12-r15 are never changed by a stub. */
struct jit_symfile_range {
    uint32_t start, end;
    uint8_t cfa_reg;               /* JIT_DWARF_RSP or JIT_DWARF_RBP */
    uint8_t ra_rule;               /* enum jit_ra_rule */
    uint8_t rbp_rule;              /* enum jit_rbp_rule */
    uint8_t reserved;
    int32_t cfa_offset;
    int32_t rbp_offset;
};

#endif
