/* Reading an AArch64 program's PLT (see plt.h). Capstone is loaded when the
 * first arm64 PLT is read: linked in, its 77,000 relocations cost every
 * memprof command 6 ms at start (bench: `memprof --version` 12 ms against 6). */
#include "plt.h"
#include <capstone/capstone.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#define STRING(x) #x
#define SONAME(major) "libcapstone.so." STRING(major)

static struct {
    cs_err (*open)(cs_arch, cs_mode, csh *);
    cs_err (*option)(csh, cs_opt_type, size_t);
    size_t (*disasm)(csh, const uint8_t *, size_t, uint64_t, size_t, cs_insn **);
    void (*free)(cs_insn *, size_t);
    cs_err (*close)(csh *);
    char why[256];
} capstone;
static pthread_once_t capstone_once = PTHREAD_ONCE_INIT;

static void load_capstone(void)
{
    void *lib = dlopen(SONAME(CS_API_MAJOR), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(capstone.why, sizeof capstone.why, "cannot load %s to read an arm64 PLT: %s (install the Debian package libcapstone4)",
                 SONAME(CS_API_MAJOR), dlerror());
        return;
    }
    *(void **)&capstone.open = dlsym(lib, "cs_open");
    *(void **)&capstone.option = dlsym(lib, "cs_option");
    *(void **)&capstone.disasm = dlsym(lib, "cs_disasm");
    *(void **)&capstone.free = dlsym(lib, "cs_free");
    *(void **)&capstone.close = dlsym(lib, "cs_close");
    if (!capstone.open || !capstone.option || !capstone.disasm || !capstone.free || !capstone.close) {
        capstone.open = NULL;
        snprintf(capstone.why, sizeof capstone.why, "%s lacks cs_open, cs_disasm or another function memprof calls",
                 SONAME(CS_API_MAJOR));
    }
}

bool a64_plt_decoder(char *err, size_t errlen)
{
    pthread_once(&capstone_once, load_capstone);
    if (!capstone.open)
        snprintf(err, errlen, "%s", capstone.why);
    return capstone.open != NULL;
}

bool a64_plt_slot(const uint8_t *code, size_t size, uint64_t address, uint64_t *slot)
{
    csh handle;
    pthread_once(&capstone_once, load_capstone);
    if (size < 8 || !capstone.open || capstone.open(CS_ARCH_ARM64, CS_MODE_ARM, &handle) != CS_ERR_OK)
        return false;
    capstone.option(handle, CS_OPT_DETAIL, CS_OPT_ON);
    cs_insn *insn = NULL;
    size_t count = capstone.disasm(handle, code, 8, address, 2, &insn);
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
        capstone.free(insn, count);
    capstone.close(&handle);
    return found;
}
