/* The x86-64 emitter: encodings from the Intel SDM, in the forms GNU as
 * picks for the same instruction (shortest displacement and immediate, the
 * %rax short forms), so that a stub can be checked byte for byte against the
 * assembler. */
#include "emit.h"
#include <string.h>

void emit_init(struct emitter *e, void *buf, size_t cap, uintptr_t pc)
{
    *e = (struct emitter){ .buf = buf, .cap = cap, .pc = pc };
}

/* --- the frame books ---------------------------------------------------------
 * Kept as the instructions are written: the CFA as a register and an
 * offset, where the caller's rbp is, and, with the CFA on rbp, rsp from rbp
 * while it is known. What cannot be followed is an error, never a guess. */

static void frame_lost(struct emitter *e)
{
    if (!e->error)
        e->error = EMIT_FRAME_UNKNOWN;
}

static bool books_open(const struct emitter *e)
{
    return e->books && !e->error;
}

static struct emit_frame *frame_now(struct emitter *e)
{
    return &e->frames[e->frame_count - 1];
}

/* The frame after the instruction just written: a new range if it changed. */
static void frame_set(struct emitter *e, struct emit_frame next)
{
    struct emit_frame *now = frame_now(e);
    if (next.cfa_reg == now->cfa_reg && next.cfa_offset == now->cfa_offset && next.rbp_saved == now->rbp_saved &&
        (!next.rbp_saved || next.rbp_offset == now->rbp_offset))
        return;
    uint32_t at = (uint32_t)(e->len - e->frame_base);
    if (!next.rbp_saved)
        next.rbp_offset = 0;
    next.start = at;
    if (now->start == at) {   /* an instruction that changes nothing runs no code */
        *now = next;
        return;
    }
    if (e->frame_count == EMIT_MAX_FRAMES) {
        frame_lost(e);
        return;
    }
    now->end = at;
    e->frames[e->frame_count++] = next;
}

void emit_frame_begin(struct emitter *e, int32_t cfa_offset)
{
    e->books = true;
    e->frame_base = e->len;
    e->frame_count = 1;
    e->frames[0] = (struct emit_frame){ .cfa_reg = RSP, .cfa_offset = cfa_offset };
    e->rsp_known = false;
}

size_t emit_frame_end(struct emitter *e)
{
    e->books = false;
    if (e->error || e->frame_count == 0)
        return 0;
    frame_now(e)->end = (uint32_t)(e->len - e->frame_base);
    return e->frame_count;
}

/* rsp moved by `delta` bytes (a push: -8). */
static void book_rsp_moved(struct emitter *e, int32_t delta)
{
    if (!books_open(e))
        return;
    struct emit_frame f = *frame_now(e);
    if (f.cfa_reg == RSP) {
        f.cfa_offset -= delta;
        frame_set(e, f);
    } else if (e->rsp_known) {
        e->rsp_from_rbp += delta;
    }
}

/* rsp set to something the books cannot follow (and $-16, a load). */
static void book_rsp_unknown(struct emitter *e)
{
    if (!books_open(e))
        return;
    if (frame_now(e)->cfa_reg == RSP)
        frame_lost(e);
    e->rsp_known = false;
}

/* A register written by an instruction other than the frame's own. */
static void book_write(struct emitter *e, enum reg r)
{
    if (!books_open(e))
        return;
    if (r == RSP)
        book_rsp_unknown(e);
    else if (r == RBP && (frame_now(e)->cfa_reg == RBP || !frame_now(e)->rbp_saved))
        frame_lost(e);   /* the CFA's base, or the caller's rbp with no copy */
}

static void book_push(struct emitter *e, bool pushes_rbp)
{
    if (!books_open(e))
        return;
    struct emit_frame f = *frame_now(e);
    if (pushes_rbp && !f.rbp_saved && f.cfa_reg == RSP) {
        f.rbp_saved = true;
        f.rbp_offset = -(f.cfa_offset + 8);   /* the new top of the stack */
        f.cfa_offset += 8;
        frame_set(e, f);
        return;
    }
    book_rsp_moved(e, -8);
}

static void book_pop(struct emitter *e, enum reg r)
{
    if (!books_open(e))
        return;
    struct emit_frame f = *frame_now(e);
    if (r == RSP) {
        book_rsp_unknown(e);
        return;
    }
    if (r != RBP) {
        book_rsp_moved(e, 8);
        return;
    }
    int32_t slot;   /* the popped slot, from the CFA */
    if (f.cfa_reg == RSP) {
        slot = -f.cfa_offset;
        f.cfa_offset -= 8;
    } else if (e->rsp_known) {
        slot = e->rsp_from_rbp - f.cfa_offset;
        f.cfa_reg = RSP;
        f.cfa_offset = -slot - 8;
    } else {
        frame_lost(e);
        return;
    }
    if (f.rbp_saved && f.rbp_offset == slot)
        f.rbp_saved = false;   /* the caller's rbp is back */
    else if (!f.rbp_saved)
        frame_lost(e);
    frame_set(e, f);
}

static void book_mov(struct emitter *e, enum reg dst, enum reg src)
{
    if (!books_open(e))
        return;
    struct emit_frame f = *frame_now(e);
    if (dst == RBP && src == RSP && f.cfa_reg == RSP && f.rbp_saved) {
        f.cfa_reg = RBP;   /* the frame pointer set: the CFA follows rbp */
        e->rsp_known = true;
        e->rsp_from_rbp = 0;
        frame_set(e, f);
    } else if (dst == RSP && src == RBP && f.cfa_reg == RBP) {
        f.cfa_reg = RSP;   /* rsp = rbp: the same offset from it */
        frame_set(e, f);
    } else {
        book_write(e, dst);
    }
}

static void book_lea(struct emitter *e, enum reg dst, struct mem src)
{
    if (!books_open(e))
        return;
    if (dst != RSP) {
        book_write(e, dst);
    } else if (src.base == RSP) {
        book_rsp_moved(e, src.disp);
    } else if (src.base == RBP && frame_now(e)->cfa_reg == RBP) {
        e->rsp_known = true;
        e->rsp_from_rbp = src.disp;
    } else {
        book_rsp_unknown(e);
    }
}

/* --- labels --------------------------------------------------------------------- */

emit_label emit_new_label(struct emitter *e)
{
    if (e->label_count == EMIT_MAX_LABELS) {
        if (!e->error)
            e->error = EMIT_BAD_LABEL;
        return 0;
    }
    e->label_at[e->label_count] = 0;
    return (emit_label)e->label_count++;
}

void emit_bind(struct emitter *e, emit_label label)
{
    if (label < e->label_count)
        e->label_at[label] = emit_here(e);
}

enum emit_error emit_finish(struct emitter *e)
{
    for (size_t i = 0; i < e->label_uses && !e->error; i++) {
        uintptr_t target = e->label_use[i].label < e->label_count ? e->label_at[e->label_use[i].label] : 0;
        if (!target) {
            e->error = EMIT_BAD_LABEL;
        } else if (!emit_rel32_reaches(e->label_use[i].end, target)) {
            e->error = EMIT_OUT_OF_REACH;
        } else {
            int32_t rel = (int32_t)(int64_t)(target - e->label_use[i].end);
            memcpy(e->buf + e->label_use[i].field, &rel, 4);
        }
    }
    e->label_uses = 0;
    return e->error;
}

/* Room for `n` more bytes, or the sticky error. */
static bool room(struct emitter *e, size_t n)
{
    if (e->error)
        return false;
    if (e->cap - e->len < n) {
        e->error = EMIT_NO_ROOM;
        return false;
    }
    return true;
}

static void byte(struct emitter *e, uint8_t b)
{
    e->buf[e->len++] = b;
}

static void bytes(struct emitter *e, const void *p, size_t n)
{
    memcpy(e->buf + e->len, p, n);
    e->len += n;
}

/* An instruction that is one opcode byte. */
static void one_byte(struct emitter *e, uint8_t opcode)
{
    if (room(e, 1))
        byte(e, opcode);
}

static void imm32(struct emitter *e, int32_t v)
{
    bytes(e, &v, 4);
}

static bool fits_int8(int64_t v)
{
    return v >= INT8_MIN && v <= INT8_MAX;
}

/* REX: W (64-bit operand), R (extends ModRM.reg), B (extends ModRM.rm or
 * the opcode's register). Omitted when it carries nothing. */
static void rex(struct emitter *e, bool w, unsigned reg, unsigned rm)
{
    uint8_t r = (uint8_t)(0x40 | (w << 3) | ((reg >> 3) & 1) << 2 | ((rm >> 3) & 1));
    if (r != 0x40)
        byte(e, r);
}

static void modrm_reg(struct emitter *e, unsigned reg, unsigned rm)
{
    byte(e, (uint8_t)(0xC0 | (reg & 7) << 3 | (rm & 7)));
}

/* ModRM (and SIB) for [base + disp]: no displacement when it is 0 (except
 * rbp/r13, which then need one), 8 bits when it fits, else 32. rsp/r12 as a
 * base need a SIB byte. At most 6 bytes. */
static void modrm_mem(struct emitter *e, unsigned reg, struct mem m)
{
    unsigned base = (unsigned)m.base & 7;
    unsigned mod = (m.disp == 0 && base != 5) ? 0 : fits_int8(m.disp) ? 1 : 2;
    byte(e, (uint8_t)(mod << 6 | (reg & 7) << 3 | base));
    if (base == 4)
        byte(e, 0x24);   /* SIB: no index, base = rsp/r12 */
    if (mod == 1)
        byte(e, (uint8_t)(int8_t)m.disp);
    else if (mod == 2)
        imm32(e, m.disp);
}

bool emit_rel32_reaches(uintptr_t from, uintptr_t to)
{
    int64_t d = (int64_t)(to - from);
    return d >= INT32_MIN && d <= INT32_MAX;
}

/* Room for an instruction of `len` bytes ending in a rel32 to `target`,
 * and that rel32; nothing is written when either is missing. */
static bool rel32_for(struct emitter *e, size_t len, uintptr_t target, int32_t *rel)
{
    if (!room(e, len))
        return false;
    uintptr_t end = emit_here(e) + len;
    if (!emit_rel32_reaches(end, target)) {
        e->error = EMIT_OUT_OF_REACH;
        return false;
    }
    *rel = (int32_t)(int64_t)(target - end);
    return true;
}

void emit_push(struct emitter *e, enum reg r)
{
    if (room(e, 2))
        rex(e, false, 0, r), byte(e, (uint8_t)(0x50 | (r & 7))), book_push(e, r == RBP);
}

void emit_pop(struct emitter *e, enum reg r)
{
    if (room(e, 2))
        rex(e, false, 0, r), byte(e, (uint8_t)(0x58 | (r & 7))), book_pop(e, r);
}

void emit_push_imm(struct emitter *e, int32_t imm)
{
    if (!room(e, 5))
        return;
    if (fits_int8(imm)) {
        byte(e, 0x6A);
        byte(e, (uint8_t)(int8_t)imm);
    } else {
        byte(e, 0x68);
        imm32(e, imm);
    }
    book_push(e, false);
}

void emit_pushfq(struct emitter *e)
{
    if (room(e, 1))
        byte(e, 0x9C), book_push(e, false);
}

void emit_popfq(struct emitter *e)
{
    if (room(e, 1))
        byte(e, 0x9D), book_pop(e, RAX);   /* rflags: a register that is not the frame's */
}

void emit_lahf(struct emitter *e)
{
    one_byte(e, 0x9F);
}

void emit_sahf(struct emitter *e)
{
    one_byte(e, 0x9E);
}

void emit_seto_al(struct emitter *e)
{
    if (room(e, 3))
        byte(e, 0x0F), byte(e, 0x90), modrm_reg(e, 0, RAX);
}

void emit_add_al_imm(struct emitter *e, int8_t imm)
{
    if (room(e, 2))
        byte(e, 0x04), byte(e, (uint8_t)imm);
}

void emit_mov_imm64(struct emitter *e, enum reg dst, uint64_t imm)
{
    if (!room(e, 10))
        return;
    rex(e, true, 0, dst);
    byte(e, (uint8_t)(0xB8 | (dst & 7)));
    bytes(e, &imm, 8);
    book_write(e, dst);
}

void emit_mov(struct emitter *e, enum reg dst, enum reg src)
{
    if (room(e, 3))
        rex(e, true, src, dst), byte(e, 0x89), modrm_reg(e, src, dst), book_mov(e, dst, src);
}

void emit_mov_store(struct emitter *e, struct mem dst, enum reg src)
{
    if (room(e, 8))
        rex(e, true, src, dst.base), byte(e, 0x89), modrm_mem(e, src, dst);
}

void emit_mov_load(struct emitter *e, enum reg dst, struct mem src)
{
    if (room(e, 8))
        rex(e, true, dst, src.base), byte(e, 0x8B), modrm_mem(e, dst, src), book_write(e, dst);
}

/* mov between a register and [rip + disp32]: `opcode` 8B loads, 89 stores. */
static void mov_rip(struct emitter *e, uint8_t opcode, enum reg r, uintptr_t addr)
{
    int32_t rel;
    if (!rel32_for(e, 7, addr, &rel))
        return;
    byte(e, (uint8_t)(0x48 | (r >> 3 & 1) << 2));   /* REX.W, R */
    byte(e, opcode);
    byte(e, (uint8_t)((r & 7) << 3 | 5));   /* mod 00, rm 101: rip + disp32 */
    imm32(e, rel);
}

void emit_mov_load_rip(struct emitter *e, enum reg dst, uintptr_t addr)
{
    size_t before = e->len;
    mov_rip(e, 0x8B, dst, addr);
    if (e->len != before)
        book_write(e, dst);
}

void emit_mov_store_rip(struct emitter *e, uintptr_t addr, enum reg src)
{
    mov_rip(e, 0x89, src, addr);
}

void emit_mov_store_rip_imm(struct emitter *e, uintptr_t addr, int32_t imm)
{
    int32_t rel;
    if (!rel32_for(e, 11, addr, &rel))   /* from the instruction's end, past the imm32 */
        return;
    byte(e, 0x48);   /* REX.W */
    byte(e, 0xC7);
    byte(e, 5);      /* /0, mod 00, rm 101: rip + disp32 */
    imm32(e, rel);
    imm32(e, imm);
}

void emit_lea(struct emitter *e, enum reg dst, struct mem src)
{
    if (room(e, 8))
        rex(e, true, dst, src.base), byte(e, 0x8D), modrm_mem(e, dst, src), book_lea(e, dst, src);
}

/* Group 1 arithmetic with an immediate: /ext selects add (0), and (4), sub
 * (5); `rax_opcode` is the short form GNU as uses for %rax and imm32. */
static void arith_imm(struct emitter *e, unsigned ext, uint8_t rax_opcode, enum reg dst, int32_t imm)
{
    if (!room(e, 7))
        return;
    rex(e, true, 0, dst);
    if (fits_int8(imm)) {
        byte(e, 0x83), modrm_reg(e, ext, dst), byte(e, (uint8_t)(int8_t)imm);
    } else if (dst == RAX) {
        byte(e, rax_opcode), imm32(e, imm);
    } else {
        byte(e, 0x81), modrm_reg(e, ext, dst), imm32(e, imm);
    }
}

void emit_add_imm(struct emitter *e, enum reg dst, int32_t imm)
{
    size_t before = e->len;
    arith_imm(e, 0, 0x05, dst, imm);
    if (e->len != before)
        dst == RSP ? book_rsp_moved(e, imm) : book_write(e, dst);
}

void emit_and_imm(struct emitter *e, enum reg dst, int32_t imm)
{
    size_t before = e->len;
    arith_imm(e, 4, 0x25, dst, imm);
    if (e->len != before)
        book_write(e, dst);
}

void emit_sub_imm(struct emitter *e, enum reg dst, int32_t imm)
{
    size_t before = e->len;
    arith_imm(e, 5, 0x2D, dst, imm);
    if (e->len != before)
        dst == RSP ? book_rsp_moved(e, -imm) : book_write(e, dst);
}

/* op %src, %dst: the r/m64, r64 encoding GNU as picks for two registers. */
static void arith_reg(struct emitter *e, uint8_t opcode, enum reg dst, enum reg src)
{
    if (room(e, 3))
        rex(e, true, src, dst), byte(e, opcode), modrm_reg(e, src, dst), book_write(e, dst);
}

void emit_add(struct emitter *e, enum reg dst, enum reg src) { arith_reg(e, 0x01, dst, src); }
void emit_sub(struct emitter *e, enum reg dst, enum reg src) { arith_reg(e, 0x29, dst, src); }
void emit_and(struct emitter *e, enum reg dst, enum reg src) { arith_reg(e, 0x21, dst, src); }
void emit_or(struct emitter *e, enum reg dst, enum reg src) { arith_reg(e, 0x09, dst, src); }
void emit_xor(struct emitter *e, enum reg dst, enum reg src) { arith_reg(e, 0x31, dst, src); }

void emit_imul(struct emitter *e, enum reg dst, enum reg src)
{
    if (room(e, 4))
        rex(e, true, dst, src), byte(e, 0x0F), byte(e, 0xAF), modrm_reg(e, dst, src), book_write(e, dst);
}

/* op %src, %fs:disp: the segment prefix, then [disp32] with neither base
 * nor index (a SIB byte; ModRM's rm 101 alone is rip-relative here). */
static void fs_arith(struct emitter *e, uint8_t opcode, int32_t disp, enum reg src)
{
    if (room(e, 10))
        byte(e, 0x64), rex(e, true, src, 0), byte(e, opcode), byte(e, (uint8_t)((src & 7) << 3 | 4)), byte(e, 0x25),
            imm32(e, disp);
}

void emit_sub_fs(struct emitter *e, int32_t disp, enum reg src) { fs_arith(e, 0x29, disp, src); }
void emit_add_fs(struct emitter *e, int32_t disp, enum reg src) { fs_arith(e, 0x01, disp, src); }

void emit_shr32_imm(struct emitter *e, enum reg dst, uint8_t imm)
{
    if (!room(e, 4))
        return;
    rex(e, false, 0, dst);
    if (imm == 1)
        byte(e, 0xD1), modrm_reg(e, 5, dst);
    else
        byte(e, 0xC1), modrm_reg(e, 5, dst), byte(e, imm);
    book_write(e, dst);
}

/* [table + index * scale] with a 32-bit table address and no base: mod 00,
 * rm 100, SIB base 101. REX carries R (reg) and X (index) only. A table
 * above 2 GiB does not fit the sign-extended displacement. */
static bool table_operand(struct emitter *e, size_t len, uintptr_t table, enum reg index)
{
    if (!room(e, len))
        return false;
    if (table > INT32_MAX || index == RSP) {   /* rsp cannot be an index */
        e->error = EMIT_OUT_OF_REACH;
        return false;
    }
    return true;
}

static void table_modrm(struct emitter *e, unsigned reg, unsigned scale_bits, uintptr_t table, enum reg index)
{
    byte(e, (uint8_t)((reg & 7) << 3 | 4));
    byte(e, (uint8_t)(scale_bits << 6 | (index & 7) << 3 | 5));
    imm32(e, (int32_t)table);
}

void emit_movzbl_load_table(struct emitter *e, enum reg dst, uintptr_t table, enum reg index)
{
    if (!table_operand(e, 9, table, index))
        return;
    uint8_t r = (uint8_t)(0x40 | ((dst >> 3) & 1) << 2 | ((index >> 3) & 1) << 1);
    if (r != 0x40)
        byte(e, r);
    byte(e, 0x0F), byte(e, 0xB6), table_modrm(e, dst, 0, table, index);
    book_write(e, dst);
}

void emit_jmp_table(struct emitter *e, uintptr_t table, enum reg index)
{
    if (!table_operand(e, 8, table, index))
        return;
    if (index >= R8)
        byte(e, 0x42);   /* REX.X */
    byte(e, 0xFF), table_modrm(e, 4, 3, table, index);
}

/* One-operand forms: opcode /ext on %dst. */
static void unary(struct emitter *e, uint8_t opcode, unsigned ext, enum reg dst)
{
    if (room(e, 3))
        rex(e, true, 0, dst), byte(e, opcode), modrm_reg(e, ext, dst), book_write(e, dst);
}

void emit_shl_cl(struct emitter *e, enum reg dst) { unary(e, 0xD3, 4, dst); }
void emit_shr_cl(struct emitter *e, enum reg dst) { unary(e, 0xD3, 5, dst); }
void emit_sar_cl(struct emitter *e, enum reg dst) { unary(e, 0xD3, 7, dst); }
void emit_neg(struct emitter *e, enum reg dst) { unary(e, 0xF7, 3, dst); }
void emit_not(struct emitter *e, enum reg dst) { unary(e, 0xF7, 2, dst); }

/* movdqu: F3 prefix, then REX, then 0F 7F (store) or 0F 6F (load). */
static void movdqu(struct emitter *e, uint8_t opcode, enum xmm x, struct mem m)
{
    if (!room(e, 10))
        return;
    byte(e, 0xF3);
    rex(e, false, x, m.base);
    byte(e, 0x0F), byte(e, opcode);
    modrm_mem(e, x, m);
}

void emit_movdqu_store(struct emitter *e, struct mem dst, enum xmm src)
{
    movdqu(e, 0x7F, src, dst);
}

void emit_movdqu_load(struct emitter *e, enum xmm dst, struct mem src)
{
    movdqu(e, 0x6F, dst, src);
}

void emit_call(struct emitter *e, uintptr_t target)
{
    int32_t rel;
    if (rel32_for(e, 5, target, &rel))
        byte(e, 0xE8), imm32(e, rel);
}

void emit_jmp(struct emitter *e, uintptr_t target)
{
    int32_t rel;
    if (rel32_for(e, 5, target, &rel))
        byte(e, 0xE9), imm32(e, rel);
}

void emit_jcc(struct emitter *e, unsigned condition, uintptr_t target)
{
    int32_t rel;
    if (condition < 16 && rel32_for(e, 6, target, &rel))
        byte(e, 0x0F), byte(e, (uint8_t)(0x80 | condition)), imm32(e, rel);
}

void emit_moved(struct emitter *e, const uint8_t *insn, size_t length, int rip_field, uintptr_t rip_address)
{
    if (!room(e, length))
        return;
    uintptr_t end = emit_here(e) + length;
    if (rip_field >= 0 && !emit_rel32_reaches(end, rip_address)) {
        e->error = EMIT_OUT_OF_REACH;
        return;
    }
    size_t at = e->len;
    bytes(e, insn, length);
    if (rip_field >= 0) {
        int32_t disp = (int32_t)(int64_t)(rip_address - end);
        memcpy(e->buf + at + rip_field, &disp, 4);
    }
}

/* Group 5 (FF): /2 call, /4 jmp, on a register or a rip-relative slot. */
void emit_call_reg(struct emitter *e, enum reg r)
{
    if (room(e, 3))
        rex(e, false, 0, r), byte(e, 0xFF), modrm_reg(e, 2, r);
}

void emit_jmp_reg(struct emitter *e, enum reg r)
{
    if (room(e, 3))
        rex(e, false, 0, r), byte(e, 0xFF), modrm_reg(e, 4, r);
}

void emit_jmp_mem(struct emitter *e, struct mem m)
{
    if (room(e, 8))
        rex(e, false, 0, (unsigned)m.base), byte(e, 0xFF), modrm_mem(e, 4, m);
}

void emit_call_rip(struct emitter *e, uintptr_t slot)
{
    int32_t rel;
    if (rel32_for(e, 6, slot, &rel))
        byte(e, 0xFF), byte(e, 2 << 3 | 5), imm32(e, rel);
}

void emit_jmp_rip(struct emitter *e, uintptr_t slot)
{
    int32_t rel;
    if (rel32_for(e, 6, slot, &rel))
        byte(e, 0xFF), byte(e, 4 << 3 | 5), imm32(e, rel);
}

void emit_jmp_rip_label(struct emitter *e, emit_label slot)
{
    if (!room(e, 6))
        return;
    if (e->label_uses == EMIT_MAX_LABELS) {
        e->error = EMIT_BAD_LABEL;
        return;
    }
    byte(e, 0xFF), byte(e, 4 << 3 | 5);
    e->label_use[e->label_uses].field = e->len;
    imm32(e, 0);   /* emit_finish writes it */
    e->label_use[e->label_uses].end = emit_here(e);
    e->label_use[e->label_uses++].label = slot;
}

void emit_align(struct emitter *e, size_t alignment)
{
    while (!e->error && emit_here(e) % alignment)
        emit_int3(e);
}

void emit_ret(struct emitter *e)
{
    one_byte(e, 0xC3);
}

void emit_int3(struct emitter *e)
{
    one_byte(e, 0xCC);
}

void emit_nop(struct emitter *e)
{
    one_byte(e, 0x90);
}

uintptr_t emit_quad(struct emitter *e, uint64_t value)
{
    uintptr_t at = emit_here(e);
    if (room(e, 8))
        bytes(e, &value, 8);
    return at;
}
