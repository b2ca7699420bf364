/* The command line of every memprof command, read one way: a table of its
 * options (struct cli_command), getopt_long underneath, the same message
 * for the same mistake, and `memprof CMD --help` made from the same table.
 *
 *   enum { CORE_TOP, CORE_HEAP, ... };
 *   static const struct cli_option core_options[] = { [CORE_TOP] = CLI_NUMBER("top", 0, "N", ...), ..., { 0 } };
 *   struct cli_args a;
 *   int opt;
 *   cli_begin(&a, &core_command, argc, argv);
 *   while ((opt = cli_next(&a)) >= 0)
 *       switch (opt) { case CORE_TOP: top = a.number; break; ... }
 *   if (opt != CLI_END)
 *       return cli_status(opt);   // 0 after --help, 2 after a one-line message
 *   ... a.operands[0 .. a.operand_count - 1] ...
 */
#ifndef MEMPROF_TOOLS_CLI_H
#define MEMPROF_TOOLS_CLI_H
#include <stdbool.h>
#include <stdio.h>

struct cli_option {
    const char *name;              /* the long name, without "--" */
    char letter;                   /* a one-letter alias ('o' for -o), or 0 */
    const char *value;             /* NULL: a flag; else the value's name in --help ("N", "FILE") */
    const char *help;              /* for --help: lines joined by '\n' */
    long min, max;                 /* min < max: the value is a whole number in [min, max] */
    const char *const *words;      /* NULL, or the values it takes (NULL-terminated) */
};

/* A table's entries: a flag; an option with a value (any non-empty text); a
 * whole number in [min, max]; one of `words`. */
#define CLI_FLAG(name_, letter_, help_) { .name = (name_), .letter = (letter_), .help = (help_) }
#define CLI_VALUE(name_, letter_, value_, help_) \
    { .name = (name_), .letter = (letter_), .value = (value_), .help = (help_) }
#define CLI_NUMBER(name_, letter_, value_, help_, min_, max_) \
    { .name = (name_), .letter = (letter_), .value = (value_), .help = (help_), .min = (min_), .max = (max_) }
#define CLI_WORDS(name_, letter_, value_, help_, words_) \
    { .name = (name_), .letter = (letter_), .value = (value_), .help = (help_), .words = (words_) }

struct cli_command {
    const char *name;              /* "core" */
    const char *operands;          /* for the usage line: "CORE [PROGRAM]" */
    const char *summary;           /* for --help: lines joined by '\n' */
    int min_operands, max_operands;   /* max -1: any number */
    bool operands_end_options;     /* run: the first operand starts COMMAND, whose options are its own */
    const struct cli_option *options;   /* ends with an entry whose name is NULL */
};

enum { CLI_END = -1, CLI_HELP = -2, CLI_ERROR = -3 };

struct option;
struct cli_args {
    const struct cli_command *command;
    struct option *longs;          /* getopt_long's tables, made from the command's once */
    char *shorts;
    int argc;
    char **argv;                   /* a copy getopt may reorder, argv[0] the command's name; kept
                                      until exit, as the operands point into it */
    const char *value;             /* the option's value, or NULL for a flag */
    long number;                   /* the value as a number, for options with a range */
    char **operands;               /* after CLI_END */
    int operand_count;
};

/* Start reading `argc` arguments (those after the command's name). */
void cli_begin(struct cli_args *a, const struct cli_command *command, int argc, char **argv);
/* The next option's index in command->options; or CLI_END (the operands
 * are in place and their count checked), CLI_HELP (--help was printed) or
 * CLI_ERROR (a one-line message was printed). */
int cli_next(struct cli_args *a);
/* The exit status after CLI_HELP (0) or CLI_ERROR (2). */
int cli_status(int result);
/* "memprof: CMD: " and the message on stderr, one line: 2, the usage status. */
int cli_fail(const struct cli_command *command, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The option lines of --help (also `memprof --help`'s section on run). */
void cli_print_options(const struct cli_command *command, FILE *out);
#endif
