/* Every command's command line (cli.h), read by getopt_long from the
 * command's table of options. */
#include "cli.h"
#include "commands.h"
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* getopt_long's `val` of a letterless option: past every char. */
#define LONG_ONLY_BASE 256

static size_t option_count(const struct cli_command *c)
{
    size_t n = 0;
    while (c->options && c->options[n].name)
        n++;
    return n;
}

int cli_fail(const struct cli_command *command, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "memprof: %s: ", command->name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return EXIT_USAGE;
}

int cli_status(int result)
{
    return result == CLI_HELP ? 0 : EXIT_USAGE;
}

static void print_usage_line(const struct cli_command *c, FILE *out)
{
    fprintf(out, "usage: memprof %s%s%s%s\n", c->name, option_count(c) ? " [OPTIONS]" : "",
            c->operands && *c->operands ? " " : "", c->operands ? c->operands : "");
}

void cli_print_options(const struct cli_command *c, FILE *out)
{
    for (const struct cli_option *o = c->options; o && o->name; o++) {
        char head[64];
        int n = snprintf(head, sizeof head, "%c%c%c --%s%s%s", o->letter ? '-' : ' ', o->letter ? o->letter : ' ',
                         o->letter ? ',' : ' ', o->name, o->value ? " " : "", o->value ? o->value : "");
        /* Each line of the help beside the option, or under it when it is long. */
        const char *line = o->help ? o->help : "";
        fprintf(out, "  %-24s", head);
        if (n > 23)
            fprintf(out, "\n  %-24s", "");
        for (;;) {
            const char *nl = strchr(line, '\n');
            fprintf(out, " %.*s\n", (int)(nl ? nl - line : (long)strlen(line)), line);
            if (!nl)
                break;
            line = nl + 1;
            fprintf(out, "  %-24s", "");
        }
    }
}

static void print_help(const struct cli_command *c)
{
    print_usage_line(c, stdout);
    if (c->summary)
        printf("\n%s\n", c->summary);
    if (option_count(c)) {
        printf("\nOptions:\n");
        cli_print_options(c, stdout);
    }
    printf("  -h, --help               this text\n");
}

/* getopt_long's tables from the command's (false: out of memory). */
static bool make_tables(struct cli_args *a)
{
    const struct cli_command *c = a->command;
    size_t n = option_count(c);
    a->longs = calloc(n + 2, sizeof *a->longs);
    char *s = a->shorts = calloc(2 * n + 8, 1);
    if (!a->longs || !s)
        return false;
    *s++ = c->operands_end_options ? '+' : ':';
    if (c->operands_end_options)
        *s++ = ':';
    for (size_t i = 0; i < n; i++) {
        const struct cli_option *o = &c->options[i];
        int val = o->letter ? (unsigned char)o->letter : LONG_ONLY_BASE + (int)i;
        a->longs[i] = (struct option){ o->name, o->value ? required_argument : no_argument, NULL, val };
        if (o->letter) {
            *s++ = o->letter;
            if (o->value)
                *s++ = ':';
        }
    }
    a->longs[n] = (struct option){ "help", no_argument, NULL, 'h' };
    *s = 'h';
    return true;
}

void cli_begin(struct cli_args *a, const struct cli_command *command, int argc, char **argv)
{
    *a = (struct cli_args){ .command = command, .argc = argc + 1 };
    /* getopt reorders what it reads: a copy, the caller's argv untouched.
     * It and the tables live until exit, as the operands point into it. */
    a->argv = calloc((size_t)argc + 2, sizeof *a->argv);
    if (a->argv && make_tables(a)) {
        a->argv[0] = (char *)command->name;
        memcpy(a->argv + 1, argv, (size_t)argc * sizeof *argv);
    } else {
        a->argv = NULL;
    }
    optind = 0;   /* getopt starts afresh (GNU: 0 re-initialises) */
    opterr = 0;
}

/* The option a getopt_long answer names, or NULL. */
static const struct cli_option *option_of(const struct cli_command *c, int val, size_t *index)
{
    size_t n = option_count(c);
    for (size_t i = 0; i < n; i++) {
        int v = c->options[i].letter ? (unsigned char)c->options[i].letter : LONG_ONLY_BASE + (int)i;
        if (v == val) {
            *index = i;
            return &c->options[i];
        }
    }
    return NULL;
}

/* The value's checks: a number in its range, or one of its words. */
static int check_value(struct cli_args *a, const struct cli_option *o)
{
    const struct cli_command *c = a->command;
    if (o->words) {
        for (const char *const *w = o->words; *w; w++)
            if (strcmp(*w, a->value) == 0)
                return 0;
        char list[256] = "";
        for (const char *const *w = o->words; *w; w++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", w == o->words ? "" : ", ", *w);
        cli_fail(c, "--%s: '%s' is not one of %s", o->name, a->value, list);
        return CLI_ERROR;
    }
    if (o->min < o->max) {
        a->number = memprof_whole_number(a->value, o->min, o->max);
        if (a->number < 0) {
            cli_fail(c, "--%s: '%s' is not a whole number from %ld to %ld", o->name, a->value, o->min, o->max);
            return CLI_ERROR;
        }
        return 0;
    }
    if (!*a->value) {
        cli_fail(c, "--%s: the %s is empty", o->name, o->value);
        return CLI_ERROR;
    }
    return 0;
}

int cli_next(struct cli_args *a)
{
    const struct cli_command *c = a->command;
    size_t n = option_count(c);
    if (!a->argv) {
        cli_fail(c, "out of memory");
        return CLI_ERROR;
    }
    int val = getopt_long(a->argc, a->argv, a->shorts, a->longs, NULL);
    size_t index;
    const struct cli_option *o;
    switch (val) {
    case -1:
        break;
    case 'h':
        print_help(c);
        return CLI_HELP;
    case ':':
        o = option_of(c, optopt, &index);
        cli_fail(c, "--%s needs a value (%s)", o ? o->name : "?", o && o->value ? o->value : "");
        return CLI_ERROR;
    case '?':
        if (optopt && optopt < LONG_ONLY_BASE)
            cli_fail(c, "unknown option -%c (memprof %s --help lists them)", optopt, c->name);
        else
            cli_fail(c, "unknown option %s (memprof %s --help lists them)", a->argv[optind - 1], c->name);
        return CLI_ERROR;
    default:
        if (!(o = option_of(c, val, &index))) {
            cli_fail(c, "unknown option %s", a->argv[optind - 1]);
            return CLI_ERROR;
        }
        a->value = o->value ? optarg : NULL;
        a->number = 0;
        if (o->value && check_value(a, o) != 0)
            return CLI_ERROR;
        return (int)index;
    }
    a->operands = a->argv + optind;
    a->operand_count = a->argc - optind;
    if (a->operand_count < c->min_operands) {
        cli_fail(c, "%s (usage: memprof %s%s %s)", a->operand_count ? "too few arguments" : "no arguments given",
                 c->name, n ? " [OPTIONS]" : "", c->operands);
        return CLI_ERROR;
    }
    if (c->max_operands >= 0 && a->operand_count > c->max_operands) {
        cli_fail(c, "too many arguments: '%s' (usage: memprof %s%s%s%s)", a->operands[c->max_operands], c->name,
                 n ? " [OPTIONS]" : "", c->operands && *c->operands ? " " : "", c->operands ? c->operands : "");
        return CLI_ERROR;
    }
    return CLI_END;
}
