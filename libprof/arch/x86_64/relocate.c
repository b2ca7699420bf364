/* The instruction relocator (relocate.h). */
#include "relocate.h"

int relocate(struct emitter *e, uintptr_t pc, const uint8_t *code, size_t avail, size_t need, struct relocation *out)
{
    *out = (struct relocation){ 0 };
    while (out->moved < need) {
        uintptr_t at = pc + out->moved;
        struct insn in;
        out->refused_at = at;
        if (!decode_insn(code + out->moved, avail - out->moved, at, &in)) {
            out->why = "the bytes are not an instruction";
            return -1;
        }
        const uint8_t *bytes = code + out->moved;
        switch (in.kind) {
        case INSN_CALL_REL32:
            emit_call(e, in.target);
            break;
        case INSN_JMP_REL32:
            emit_jmp(e, in.target);
            break;
        case INSN_BRANCH_REL:
            if (in.is_jcc)
                emit_jcc(e, in.condition, in.target);
            else if (in.is_jmp8)
                emit_jmp(e, in.target);
            else {
                out->why = "a relative branch with no 32-bit form (loop, jrcxz, xbegin)";
                return -1;
            }
            break;
        default:
            emit_moved(e, bytes, in.length, in.rip_relative ? in.rip_field_offset : -1, in.rip_address);
            break;
        }
        if (e->error) {
            out->why = e->error == EMIT_OUT_OF_REACH ? "its target is out of a rel32's reach from the stub"
                                                     : "the stub has no room for it";
            return -1;
        }
        out->moved += in.length;
        out->count++;
        /* Nothing after an instruction that does not fall through runs
         * from here: what is moved must be enough by then. */
        bool ends = in.kind == INSN_RET || in.kind == INSN_JMP_REL32 || (in.kind == INSN_BRANCH_REL && in.is_jmp8) ||
                    in.kind == INSN_JMP_INDIRECT;
        if (ends && out->moved < need) {
            out->refused_at = pc + out->moved;
            out->why = "the function's flow leaves before the patch's bytes end";
            return -1;
        }
    }
    return 0;
}

struct branch_search {
    uintptr_t start, end;
    uintptr_t from;
};

static int visit_branch(void *ctx, uintptr_t pc, const struct insn *in)
{
    struct branch_search *s = ctx;
    bool relative = in->kind == INSN_CALL_REL32 || in->kind == INSN_JMP_REL32 || in->kind == INSN_BRANCH_REL;
    if (relative && in->target > s->start && in->target < s->end) {
        s->from = pc;
        return 1;
    }
    return 0;
}

bool relocate_branch_into(const struct code_range *ranges, size_t n, uintptr_t start, size_t length, uintptr_t *from)
{
    struct branch_search s = { start, start + length, 0 };
    bool found = decode_ranges(ranges, n, 0, visit_branch, &s) == 1;
    if (found)
        *from = s.from;
    return found;
}
