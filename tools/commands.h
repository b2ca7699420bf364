/* The memprof CLI's commands other than `run`, one file each. Each returns
 * the process exit status. */
#ifndef MEMPROF_TOOLS_COMMANDS_H
#define MEMPROF_TOOLS_COMMANDS_H

int cmd_symbols(int argc, char **argv);    /* memprof symbols [--all] [--arch ARCH] FILE */
int cmd_imports(int argc, char **argv);    /* memprof imports [--arch ARCH] [--format F] FILE */
int cmd_symbolize(int argc, char **argv);  /* memprof symbolize FILE ADDRESS... */
int cmd_attach(int argc, char **argv);     /* memprof attach PID [...] */
int cmd_threads(int argc, char **argv);    /* memprof threads -p PID */
int cmd_collapse(int argc, char **argv);   /* memprof collapse REPORT */
int cmd_flamegraph(int argc, char **argv); /* memprof flamegraph REPORT */
int cmd_diff(int argc, char **argv);       /* memprof diff BEFORE AFTER */
int cmd_merge(int argc, char **argv);      /* memprof merge [-o FILE] REPORT... */
int cmd_top(int argc, char **argv);        /* memprof top [--interval S] [--batch] PID */
int cmd_proto(int argc, char **argv);      /* memprof proto [-o FILE] REPORT */
int cmd_timeline(int argc, char **argv);   /* memprof timeline [-o FILE.svg|.csv] TIMELINE */
int cmd_groups(int argc, char **argv);     /* memprof groups [--group G]... [--strings N] [TABLE] */
int cmd_heap_table(int argc, char **argv); /* memprof heap-table [FILE] */
int cmd_name_sites(int argc, char **argv); /* memprof name-sites < TEXT */
int cmd_safe_point(int argc, char **argv); /* memprof safe-point < BACKTRACES */
int cmd_keep(int argc, char **argv);       /* memprof keep --dir DIR NAME < TEXT */
int cmd_core(int argc, char **argv);       /* memprof core CORE [PROGRAM] */
int cmd_crash_helper(int argc, char **argv); /* memprof crash-helper --dir DIR PID SIGNAL [EXE] < CORE */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
/* The CLI's exit statuses besides 0 (`run` exits with COMMAND's own). */
enum { EXIT_FAILED = 1, EXIT_USAGE = 2 };
/* Whether this memprof runs from the build tree (its runtime and gdbinit
 * are the build tree's). */
bool memprof_in_build_tree(void);
/* A whole number from the command line (digits only) in [min, max], or -1:
 * every command reads its numbers so. */
long memprof_whole_number(const char *s, long min, long max);
/* Check -o FILE and make it absolute into `out`: 0, or an exit status after
 * a one-line message. */
int memprof_resolve_output(const char *spec, char *out, size_t size);

#include <stdio.h>
#include <sys/types.h>
/* Name the sites of the runtime's raw heap report: 0, or -1 on a write error. */
struct heap_report_options {
    unsigned long top;      /* 0: every row */
    const char *filter;     /* NULL, or rows whose names contain it */
    const char *when;       /* the header's "at exit of" (NULL), or "in" */
    bool keep_open;         /* the objects' symbolizers kept for the next call (memprof top) */
};
int heap_report_symbolize(FILE *raw, FILE *out, pid_t pid, const struct heap_report_options *opt);
/* Name each line's first " 0xADDRESS object+0xOFFSET" (memprof name-sites):
 * 0, or 1 on a write error. */
int name_sites(FILE *in, FILE *out);
/* The report of a core file (core/core.c): 0, or 1 with a line in `why`. */
enum core_report_kind {
    CORE_REPORT_AUTO, CORE_REPORT_RUBY, CORE_REPORT_HEAP, CORE_REPORT_WHERE, CORE_REPORT_THREADS, CORE_REPORT_STATUS
};
struct core_report_options {
    enum core_report_kind kind;  /* AUTO: Ruby's objects when it ran Ruby, else the C heap */
    unsigned long top;
    const char *filter;
    uint64_t where;              /* the address, for CORE_REPORT_WHERE */
    const char *dump, *pprof;    /* NULL, or files for the Ruby dump and the C heap's pprof profile */
    const char *proto;           /* NULL, or a file for the report as pprof's profile.proto */
    const char *program;         /* NULL, or the program's file (for a core without NT_FILE) */
};
int core_report(const char *path, FILE *out, const struct core_report_options *opt, char *why, size_t why_size);
/* The runtime's timeline (MEMPROF_TIMELINE) as a chart or a series: SVG
 * when `output` ends in .svg, CSV for .csv or stdout (NULL). An exit
 * status, after a line naming the problem. */
int timeline_convert(FILE *raw, const char *raw_name, const char *output);
/* Whether `path` names a timeline's output: FILE.svg or FILE.csv. */
bool timeline_output_named(const char *path);
/* A C++ symbol's name demangled (valid until the next call), else `name`. */
const char *demangle(const char *name);
#endif
