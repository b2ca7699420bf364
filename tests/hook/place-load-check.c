/* hook/place_load.c: the code a stub runs to read a DWARF place, each kind
 * of operation it computes, run for real. A stub made of stub_keep_begin,
 * place_load into %rsi, a store of %rsi and stub_keep_end is called as a
 * function of six arguments (so the registers it reads are known); the
 * value it finds is compared with the same computation written in C. The
 * DWARF operation numbers are the standard's (dwarf.h). */
#include "hook/place_load.h"
#include "hook/stub_keep.h"
#include "tap.h"
#include <dwarf.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

typedef void stub_fn(uint64_t rdi, uint64_t rsi, uint64_t rdx, uint64_t rcx, uint64_t r8, uint64_t r9);
static uint64_t found;
static uint8_t *code;

/* DWARF registers: 5 rdi, 4 rsi, 1 rdx, 2 rcx, 8 r8, 9 r9. */
#define RDI_ 5
#define RSI_ 4
#define RDX_ 1
#define RCX_ 2
#define R8_ 8
#define R9_ 9
#define OP(a, ...) { .atom = (a), __VA_ARGS__ }

static const uint64_t array[4] = { 0x1111, 0x2222, 0x3333, 0x4444 };

static uint64_t run(const struct inline_entry *w)
{
    struct emitter e;
    emit_init(&e, code, 4096, (uintptr_t)code);
    stub_keep_begin(&e);
    place_load(&e, RSI, w);
    emit_mov_imm64(&e, RAX, (uint64_t)(uintptr_t)&found);
    emit_mov_store(&e, MEM(RAX, 0), RSI);
    stub_keep_end(&e);
    emit_ret(&e);
    if (emit_finish(&e))
        return 0xdeadbeef;
    found = 0;
    /* rdi 1000, rsi 7, rdx -3, rcx 0x10, r8 the array, r9 5 */
    ((stub_fn *)code)(1000, 7, (uint64_t)-3, 0x10, (uint64_t)(uintptr_t)array, 5);
    return found;
}

static uint64_t value_of(const struct place_op *ops, unsigned n, bool is_value)
{
    struct inline_entry w = { .place = PARAM_EXPRESSION, .op_count = n, .is_value = is_value };
    memcpy(w.ops, ops, n * sizeof *ops);
    return run(&w);
}

#define EXPR(name, expected, ...)                                                              \
    do {                                                                                       \
        const struct place_op ops_[] = { __VA_ARGS__ };                                        \
        uint64_t got_ = value_of(ops_, sizeof ops_ / sizeof *ops_, true);                      \
        ok(got_ == (uint64_t)(expected), "%s: %#llx (expected %#llx)", name,                   \
           (unsigned long long)got_, (unsigned long long)(uint64_t)(expected));                \
    } while (0)

int main(void)
{
    code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (code == MAP_FAILED) {
        printf("Bail out! no executable page\n");
        return 1;
    }
    /* The simple places first. */
    struct inline_entry reg = { .place = PARAM_REGISTER, .reg = RDX_ };
    ok(run(&reg) == (uint64_t)-3, "a register (rdx, pushed by the stub)");
    struct inline_entry slot = { .place = PARAM_REGISTER_MEMORY, .reg = R8_, .offset = 24 };
    ok(run(&slot) == array[3], "a slot off a register (24(%%r8))");
    struct inline_entry constant = { .place = PARAM_CONSTANT, .value = 0x123456789abcdef0 };
    ok(run(&constant) == 0x123456789abcdef0, "a constant");

    EXPR("breg rdi + 24", 1000 + 24, OP(DW_OP_breg0 + RDI_, .operand = 24));
    EXPR("bregx rdi - 8", 1000 - 8, OP(DW_OP_bregx, .operand = RDI_, .operand2 = (uint64_t)-8));
    EXPR("rsi - rdx", 7 - -3, OP(DW_OP_breg0 + RSI_, .operand = 0), OP(DW_OP_breg0 + RDX_, .operand = 0),
         OP(DW_OP_minus));
    EXPR("rsi * 3", 7 * 3, OP(DW_OP_breg0 + RSI_, .operand = 0), OP(DW_OP_lit3), OP(DW_OP_mul));
    EXPR("rdx >> 1, logical", (uint64_t)-3 >> 1, OP(DW_OP_breg0 + RDX_, .operand = 0), OP(DW_OP_lit1),
         OP(DW_OP_shr));
    EXPR("rdx >> 1, arithmetic", (uint64_t)(-3 >> 1), OP(DW_OP_breg0 + RDX_, .operand = 0), OP(DW_OP_lit1),
         OP(DW_OP_shra));
    EXPR("rcx << 4", 0x10 << 4, OP(DW_OP_breg0 + RCX_, .operand = 0), OP(DW_OP_lit4), OP(DW_OP_shl));
    EXPR("rcx as the code had it, after a shift used %rcx", (1 << 1) + 0x10, OP(DW_OP_lit1), OP(DW_OP_lit1),
         OP(DW_OP_shl), OP(DW_OP_breg0 + RCX_, .operand = 0), OP(DW_OP_plus));
    EXPR("deref of r8 + 8", array[1], OP(DW_OP_breg0 + R8_, .operand = 8), OP(DW_OP_deref));
    EXPR("swap, minus", 2 - 9, OP(DW_OP_lit9), OP(DW_OP_lit2), OP(DW_OP_swap), OP(DW_OP_minus));
    EXPR("pick 2", 3 + 1 + 2 + 1, OP(DW_OP_lit1), OP(DW_OP_lit2), OP(DW_OP_lit3), OP(DW_OP_pick, .operand = 2),
         OP(DW_OP_plus), OP(DW_OP_plus), OP(DW_OP_plus));
    EXPR("dup, mul", 36, OP(DW_OP_lit6), OP(DW_OP_dup), OP(DW_OP_mul));
    EXPR("over, minus, plus", 6 + (2 - 6), OP(DW_OP_lit6), OP(DW_OP_lit2), OP(DW_OP_over), OP(DW_OP_minus),
         OP(DW_OP_plus));
    EXPR("drop", 6, OP(DW_OP_lit6), OP(DW_OP_lit2), OP(DW_OP_drop));
    EXPR("neg r9", -5, OP(DW_OP_breg0 + R9_, .operand = 0), OP(DW_OP_neg));
    EXPR("not 0", ~0ull, OP(DW_OP_lit0), OP(DW_OP_not));
    EXPR("and", 12 & 10, OP(DW_OP_lit12), OP(DW_OP_lit10), OP(DW_OP_and));
    EXPR("or", 12 | 10, OP(DW_OP_lit12), OP(DW_OP_lit10), OP(DW_OP_or));
    EXPR("xor", 12 ^ 10, OP(DW_OP_lit12), OP(DW_OP_lit10), OP(DW_OP_xor));
    EXPR("constu, plus_uconst past 32 bits", 0x123456789ull + 0x100000000ull,
         OP(DW_OP_constu, .operand = 0x123456789ull), OP(DW_OP_plus_uconst, .operand = 0x100000000ull));
    EXPR("GCC's sign extension of an int: (i & 1) + 200 as int", (int64_t)(int32_t)((0x10 & 1) + 200),
         OP(DW_OP_breg0 + RCX_, .operand = 0), OP(DW_OP_lit1), OP(DW_OP_and), OP(DW_OP_plus_uconst, .operand = 200),
         OP(DW_OP_const1u, .operand = 32), OP(DW_OP_shl), OP(DW_OP_const1u, .operand = 32), OP(DW_OP_shra));
    /* Without DW_OP_stack_value the result is where the value is. */
    const struct place_op address[] = { OP(DW_OP_breg0 + R8_, .operand = 16) };
    ok(value_of(address, 1, false) == array[2], "a memory location: the value at r8 + 16");
    return tap_done();
}
