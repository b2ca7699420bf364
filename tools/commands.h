/* The memprof CLI's commands other than `run`, one file each. Each returns
 * the process exit status. */
#ifndef MEMPROF_TOOLS_COMMANDS_H
#define MEMPROF_TOOLS_COMMANDS_H

int cmd_symbols(int argc, char **argv);    /* memprof symbols FILE */
int cmd_symbolize(int argc, char **argv);  /* memprof symbolize FILE ADDRESS... */

#include <stdio.h>
#include <sys/types.h>
/* Name the sites of the runtime's raw heap report: 0, or -1 on a write error. */
struct heap_report_options {
    unsigned long top;      /* 0: every row */
    const char *filter;     /* NULL, or rows whose names contain it */
};
int heap_report_symbolize(FILE *raw, FILE *out, pid_t pid, const struct heap_report_options *opt);
#endif
