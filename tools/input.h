/* Where a CLI command reads: a file, or stdin ("-"). GDB's `pipe` writes
 * into the commands memprof.gdbinit runs; a GDB without Python (gdb-minimal)
 * does not ignore SIGPIPE, so a reader that leaves before the end would kill
 * it. Stdin taken as input is read to its end whatever the exit path. */
#ifndef MEMPROF_TOOLS_INPUT_H
#define MEMPROF_TOOLS_INPUT_H
#include <stdio.h>

/* Stdin as this command's input: the rest of it is read and dropped when
 * the command exits (return from main or exit()). */
FILE *input_stdin(void);
/* PATH opened for reading ("-": input_stdin()), or NULL with errno set. */
FILE *input_open(const char *path);
/* Close what input_open gave (stdin stays open for the drain at exit). */
void input_close(FILE *in);
#endif
