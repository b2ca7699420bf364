/* The memprof CLI's commands other than `run`, one file each. Each returns
 * the process exit status. */
#ifndef MEMPROF_TOOLS_COMMANDS_H
#define MEMPROF_TOOLS_COMMANDS_H

int cmd_symbols(int argc, char **argv);    /* memprof symbols FILE */
int cmd_symbolize(int argc, char **argv);  /* memprof symbolize FILE ADDRESS... */
#endif
