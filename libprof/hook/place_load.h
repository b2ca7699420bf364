/* Code, inside a stub that keeps registers as stub_keep.h does, that puts
 * the value of a DWARF place (elf/inline_entries.h) into a register, as the
 * place was at the code the stub was reached from: a register, a slot off
 * one, a constant, or a DWARF expression computed on the machine stack. */
#ifndef MEMPROF_HOOK_PLACE_LOAD_H
#define MEMPROF_HOOK_PLACE_LOAD_H
#include "../arch/x86_64/emit.h"
#include "../objfile/inline_entries.h"

/* `w` is PARAM_REGISTER, PARAM_REGISTER_MEMORY, PARAM_CONSTANT or
 * PARAM_EXPRESSION, its registers general ones (DWARF 0-15). The code uses
 * %rax and %rcx besides `to` (the registers as they were are read from the
 * stub's pushes, so any of them may be written before). */
void place_load(struct emitter *e, enum reg to, const struct inline_entry *w);
#endif
