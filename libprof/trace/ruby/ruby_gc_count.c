/* The GC's count read in place. In CRuby 3.1 rb_gc_count() is four loads and
 * a return (ruby_current_vm_ptr's GOT slot, the VM, its objspace, the
 * count): the record's common path reads the count where it lies instead of
 * calling, so that it makes no call at all and keeps no register across one.
 * The loads are read off rb_gc_count's own code, each one checked; code of
 * any other shape finds nothing, and records call rb_gc_count. */
#include "ruby_state.h"
#if defined(__x86_64__)
#include "../../arch/x86_64/decode.h"

#define MAX_LOADS 4

const size_t *ruby_gc_count_locate(const struct ruby_api *api)
{
    uintptr_t pc = (uintptr_t)api->rb_gc_count;
    if (!pc || !*api->ruby_current_vm_ptr)
        return NULL;
    /* Follow the loads as rb_gc_count makes them now: each from the register
     * the one before it loaded; they must pass through ruby_current_vm_ptr,
     * so that what follows is the VM's (one VM, its objspace for life). */
    uintptr_t vm_var = (uintptr_t)api->ruby_current_vm_ptr, address = 0, value = 0;
    unsigned reg = INSN_BASE_RIP;
    bool through_vm = false;
    for (int i = 0; i < MAX_LOADS; i++) {
        struct insn_load load;
        if (!decode_load((const void *)pc, 16, pc, &load) || load.base != reg)
            return NULL;
        address = reg == INSN_BASE_RIP ? load.address : value + load.address;
        value = *(const uintptr_t *)address;
        /* Before the VM: the variable itself, or a GOT slot holding its address. */
        if (!through_vm && address != vm_var && value != vm_var)
            return NULL;
        through_vm = through_vm || address == vm_var;
        reg = load.dest;
        pc += load.length;
        struct insn next;
        if (through_vm && address != vm_var && reg == 0 && decode_insn((const void *)pc, 16, pc, &next) &&
            next.kind == INSN_RET)
            return value == api->rb_gc_count() ? (const size_t *)address : NULL;
    }
    return NULL;
}
#else
/* Another architecture's code is not read for it (yet): records call rb_gc_count. */
const size_t *ruby_gc_count_locate(const struct ruby_api *api)
{
    (void)api;
    return NULL;
}
#endif
