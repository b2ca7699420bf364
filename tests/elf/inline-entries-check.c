/* The copies of a function and a parameter's place at each entry, as
 * libprof/objfile/inline_entries.c reads them from DWARF:
 *
 *   inline-entries-check FILE FUNCTION PARAMETER
 *
 * one line per copy, "ENTRY own|inlined PLACE": "reg N", "mem reg N + OFF",
 * "frame cfa + OFF", "const V", "expr value|address OP N, OP..." or
 * "unreadable: WHY" (ENTRY and OFF in hex
 * or decimal as readelf and GDB show them). inline-entries.test checks the
 * lines against readelf and against GDB stopped at each entry. */
#include "objfile/inline_entries.h"
#include <dwarf.h>
#include <inttypes.h>
#include <libdwarf.h>
#include <stdbool.h>
#include <stdio.h>

static int print(void *ctx, const struct inline_entry *e)
{
    (void)ctx;
    if (e->further_start_of)
        return 0;   /* a further start of a copy: readelf-copies.py lists each copy once, at its entry */
    printf("%" PRIx64 " %s ", e->entry, e->inlined ? "inlined" : "own");
    switch (e->place) {
    case PARAM_REGISTER: printf("reg %u\n", e->reg); break;
    case PARAM_REGISTER_MEMORY: printf("mem reg %u + %" PRId64 "\n", e->reg, e->offset); break;
    case PARAM_FRAME_MEMORY:
        if (e->frame_is_cfa)
            printf("frame cfa + %" PRId64 "\n", e->offset);
        else
            printf("frame reg %u + %" PRId64 " + %" PRId64 "\n", e->reg, e->frame_offset, e->offset);
        break;
    case PARAM_CONSTANT: printf("const %" PRIu64 "\n", e->value); break;
    case PARAM_EXPRESSION:
        /* As readelf names the operations, without DW_OP_; operands in
         * decimal (signed for the signed forms and bregs). */
        printf("expr %s", e->is_value ? "value" : "address");
        for (unsigned i = 0; i < e->op_count; i++) {
            const struct place_op *op = &e->ops[i];
            const char *name = NULL;
            dwarf_get_OP_name(op->atom, &name);
            printf("%s %s", i ? "," : "", name ? name + 6 : "?");
            bool is_signed = op->atom == DW_OP_consts || op->atom == DW_OP_const1s || op->atom == DW_OP_const2s ||
                             op->atom == DW_OP_const4s || op->atom == DW_OP_const8s ||
                             (op->atom >= DW_OP_breg0 && op->atom <= DW_OP_breg31);
            if (op->atom == DW_OP_bregx)
                printf(" %" PRIu64 " %" PRId64, op->operand, (int64_t)op->operand2);
            else if (is_signed)
                printf(" %" PRId64, (int64_t)op->operand);
            else if ((op->atom >= DW_OP_const1u && op->atom <= DW_OP_constu) || op->atom == DW_OP_plus_uconst ||
                     op->atom == DW_OP_pick)
                printf(" %" PRIu64, op->operand);
        }
        printf("\n");
        break;
    case PARAM_ENTRY_VALUE: printf("entry_value reg %u\n", e->reg); break;
    case PARAM_CFA:
    case PARAM_UNREADABLE: printf("unreadable: %s\n", e->why); break;
    }
    return 0;
}

int main(int argc, char **argv)
{
    char err[512];
    if (argc != 4)
        return 2;
    if (elf_inline_entries(argv[1], argv[2], argv[3], print, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    return 0;
}
