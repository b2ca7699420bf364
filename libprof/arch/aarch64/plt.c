/* Reading an AArch64 program's PLT (see plt.h). */
#include "plt.h"
#include <capstone/capstone.h>

bool a64_plt_slot(const uint8_t *code, size_t size, uint64_t address, uint64_t *slot)
{
    csh handle;
    if (size < 8 || cs_open(CS_ARCH_ARM64, CS_MODE_ARM, &handle) != CS_ERR_OK)
        return false;
    cs_option(handle, CS_OPT_DETAIL, CS_OPT_ON);
    cs_insn *insn = NULL;
    size_t count = cs_disasm(handle, code, 8, address, 2, &insn);
    bool found = false;
    if (count == 2 && insn[0].id == ARM64_INS_ADRP && insn[1].id == ARM64_INS_LDR) {
        const cs_arm64 *page = &insn[0].detail->arm64, *load = &insn[1].detail->arm64;
        if (page->op_count == 2 && page->operands[0].type == ARM64_OP_REG && page->operands[1].type == ARM64_OP_IMM &&
            load->op_count == 2 && load->operands[1].type == ARM64_OP_MEM &&
            load->operands[1].mem.base == page->operands[0].reg && load->operands[1].mem.index == ARM64_REG_INVALID) {
            *slot = (uint64_t)page->operands[1].imm + (uint64_t)(int64_t)load->operands[1].mem.disp;
            found = true;
        }
    }
    if (count)
        cs_free(insn, count);
    cs_close(&handle);
    return found;
}
