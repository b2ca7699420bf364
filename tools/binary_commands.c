/* memprof symbols [--all] FILE    the function symbols memprof names code with
 *                                 (--all: every symbol), ELF or Mach-O
 * memprof imports FILE            each imported function's slot and stub
 * memprof symbolize FILE ADDR...  function+offset and file:line of addresses,
 *                                 with the functions inlined there
 *
 * The symbol dump of the seeds' tools, with where each part comes from: the
 * file's .symtab or .dynsym, its DWARF, or a separate debug file. */
#include "commands.h"
#include "cli.h"
#include "json.h"
#include "objfile/binary.h"
#include "objfile/symbolizer.h"
#include "objfile/symbols.h"
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static struct symbolizer *open_or_complain(const char *path)
{
    char err[PATH_MAX + 128];
    struct symbolizer *s = symbolizer_open(path, err, sizeof err);
    if (!s)
        fprintf(stderr, "memprof: %s\n", err);
    return s;
}

/* The options of the commands on a binary file. */
struct binary_args {
    const char *arch, *format, *path;
    bool all;
};

#define ARCH_OPTION CLI_VALUE("arch", 0, "ARCH", "a universal (fat) Mach-O file's slice: x86_64, arm64, ...")
static const struct cli_option symbols_options[] = {
    CLI_FLAG("all", 0, "every symbol, local, external or undefined, with its binding and section"),
    ARCH_OPTION,
    { 0 },
};
static const struct cli_command symbols_command = {
    .name = "symbols", .operands = "FILE", .min_operands = 1, .max_operands = 1,
    .summary = "The function symbols memprof names code with in an ELF or Mach-O FILE (from .symtab\n"
               "or .dynsym, or its separate debug file; LC_SYMTAB), and where they come from.",
    .options = symbols_options,
};
static const char *const import_formats[] = { "text", "tsv", "json", NULL };
static const struct cli_option imports_options[] = {
    ARCH_OPTION,
    CLI_WORDS("format", 0, "F", "text (the default), tsv or json", import_formats),
    { 0 },
};
static const struct cli_command imports_command = {
    .name = "imports", .operands = "FILE", .min_operands = 1, .max_operands = 1,
    .summary = "Each function FILE imports: the slot the dynamic linker fills (GOT, lazy or non-lazy\n"
               "pointer), the stub that jumps through it (PLT, __stubs) and the library.",
    .options = imports_options,
};

/* CLI_END, or CLI_HELP or CLI_ERROR (cli_status gives the exit status). */
static int parse_binary_args(const struct cli_command *c, int argc, char **argv, struct binary_args *b)
{
    *b = (struct binary_args){ .format = "text" };
    struct cli_args a;
    int k;
    cli_begin(&a, c, argc, argv);
    while ((k = cli_next(&a)) >= 0) {
        const char *name = c->options[k].name;
        if (strcmp(name, "arch") == 0)
            b->arch = a.value;
        else if (strcmp(name, "format") == 0)
            b->format = a.value;
        else
            b->all = true;
    }
    if (k == CLI_END)
        b->path = a.operands[0];
    return k;
}

static struct binary *open_binary(const struct binary_args *a)
{
    char err[PATH_MAX + 512];
    struct binary *b = binary_open(a->path, a->arch, err, sizeof err);
    if (!b)
        fprintf(stderr, "memprof: %s\n", err);
    return b;
}

static const char *bind_name(const struct binary_symbol *s)
{
    if (s->bind == BINARY_UNDEFINED)
        return s->weak ? "weak-undef" : "undefined";
    if (s->bind == BINARY_LOCAL)
        return "local";
    return s->weak ? "weak" : "external";
}

int cmd_symbols(int argc, char **argv)
{
    struct binary_args a;
    int rc = parse_binary_args(&symbols_command, argc, argv, &a);
    if (rc != CLI_END)
        return cli_status(rc);
    struct binary *b = open_binary(&a);
    if (!b)
        return EXIT_USAGE;
    printf("# %s: %s\n", binary_format(b), binary_sources(b));
    for (size_t i = 0; i < binary_symbol_count(b); i++) {
        const struct binary_symbol *s = binary_symbol_at(b, i);
        if (!a.all) {   /* the functions memprof names code with */
            if (s->function && s->bind != BINARY_UNDEFINED && s->address)
                printf("%016" PRIx64 " %6" PRIu64 " %s\n", s->address, s->size, s->name);
        } else if (s->bind == BINARY_UNDEFINED) {
            printf("%16s %6s %-10s %-20s %s%s%s%s\n", "", "", bind_name(s), "-", s->name, *s->library ? " (" : "",
                   s->library, *s->library ? ")" : "");
        } else {
            printf("%016" PRIx64 " %6" PRIu64 " %-10s %-20s %s\n", s->address, s->size, bind_name(s),
                   *s->section ? s->section : "-", s->name);
        }
    }
    binary_close(b);
    return 0;
}

static void import_json(const struct binary_import *imp, bool last)
{
    printf("  {\"slot\": \"0x%" PRIx64 "\", \"kind\": ", imp->slot);
    json_string(stdout, imp->slot_kind, strlen(imp->slot_kind));
    printf(", \"section\": ");
    json_string(stdout, imp->slot_section, strlen(imp->slot_section));
    if (imp->stub) {
        printf(", \"stub\": \"0x%" PRIx64 "\", \"stub_section\": ", imp->stub);
        json_string(stdout, imp->stub_section, strlen(imp->stub_section));
    } else {
        printf(", \"stub\": null, \"stub_section\": null");
    }
    printf(", \"lazy\": %s, \"library\": ", imp->lazy ? "true" : "false");
    json_string(stdout, imp->library, strlen(imp->library));
    printf(", \"version\": ");
    json_string(stdout, imp->version, strlen(imp->version));
    printf(", \"symbol\": ");
    json_string(stdout, imp->symbol, strlen(imp->symbol));
    printf("}%s\n", last ? "" : ",");
}

int cmd_imports(int argc, char **argv)
{
    struct binary_args a;
    int rc = parse_binary_args(&imports_command, argc, argv, &a);
    if (rc != CLI_END)
        return cli_status(rc);
    struct binary *b = open_binary(&a);
    if (!b)
        return EXIT_USAGE;
    const struct binary_import *imports;
    size_t n;
    const char *why;
    if (!binary_imports(b, &imports, &n, &why)) {
        fprintf(stderr, "memprof: %s: cannot list its imports: %s\n", a.path, why);
        binary_close(b);
        return EXIT_USAGE;
    }
    bool json = strcmp(a.format, "json") == 0, tsv = strcmp(a.format, "tsv") == 0;
    if (json)
        printf("[\n");
    else if (tsv)
        printf("slot\tkind\tsection\tstub\tstub_section\tbinding\tlibrary\tversion\tsymbol\n");
    else
        printf("# %s: %s\n# %-16s %-18s %-22s %-18s %-16s %-6s %s\n", binary_format(b), binary_sources(b), "slot",
               "kind", "section", "stub", "stub section", "bound", "symbol (library)");
    for (size_t i = 0; i < n; i++) {
        const struct binary_import *imp = &imports[i];
        char stub[24] = "-";
        if (imp->stub)
            snprintf(stub, sizeof stub, "0x%" PRIx64, imp->stub);
        if (json) {
            import_json(imp, i + 1 == n);
        } else if (tsv) {
            printf("0x%" PRIx64 "\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", imp->slot, imp->slot_kind, imp->slot_section,
                   stub, *imp->stub_section ? imp->stub_section : "-", imp->lazy ? "lazy" : "load",
                   *imp->library ? imp->library : "-", *imp->version ? imp->version : "-", imp->symbol);
        } else {
            char version[80] = "";
            if (*imp->version)
                snprintf(version, sizeof version, "@%s", imp->version);
            printf("0x%-16" PRIx64 " %-18s %-22s %-18s %-16s %-6s %s%s%s%s%s\n", imp->slot, imp->slot_kind,
                   imp->slot_section, stub, *imp->stub_section ? imp->stub_section : "-", imp->lazy ? "lazy" : "load",
                   imp->symbol, version, *imp->library ? " (" : "", imp->library, *imp->library ? ")" : "");
        }
    }
    if (json)
        printf("]\n");
    binary_close(b);
    return 0;
}

static const struct cli_command symbolize_command = {
    .name = "symbolize", .operands = "FILE ADDRESS...", .min_operands = 2, .max_operands = -1,
    .summary = "Name file ADDRESSes (hex, e.g. 0x1139) of FILE: function+offset and file:line, with\n"
               "the functions inlined there.",
};

int cmd_symbolize(int argc, char **argv)
{
    struct cli_args a;
    int k;
    cli_begin(&a, &symbolize_command, argc, argv);
    while ((k = cli_next(&a)) >= 0)
        ;
    if (k != CLI_END)
        return cli_status(k);
    argc = a.operand_count;
    argv = a.operands;
    uint64_t *addrs = calloc((size_t)argc, sizeof *addrs);
    if (!addrs)
        return EXIT_USAGE;
    for (int i = 1; i < argc; i++) {
        char *end;
        errno = 0;
        addrs[i] = strtoull(argv[i], &end, 16);
        if (errno || *end || end == argv[i]) {
            fprintf(stderr, "memprof: symbolize: '%s' is not a hexadecimal address\n", argv[i]);
            free(addrs);
            return EXIT_USAGE;
        }
    }
    struct symbolizer *s = open_or_complain(argv[0]);
    if (!s) {
        free(addrs);
        return EXIT_USAGE;
    }
    printf("# %s\n", symbolizer_sources(s));
    symbolizer_expect(s, addrs + 1, (size_t)argc - 1);
    for (int i = 1; i < argc; i++) {
        struct symbol_info frames[SYMBOLIZER_MAX_INLINED];
        size_t n = symbolizer_frames(s, addrs[i], frames, SYMBOLIZER_MAX_INLINED);
        for (size_t f = 0; f < n; f++) {
            const char *function = demangle(frames[f].function);
            if (f == 0)
                printf("0x%" PRIx64 " ", addrs[i]);
            else
                printf("  inlined into ");
            if (!function)
                printf("??");
            else if (f + 1 == n)
                printf("%s+0x%" PRIx64, function, frames[f].offset);
            else
                printf("%s", function);
            if (frames[f].file)
                printf(" %s:%u", frames[f].file, frames[f].line);
            putchar('\n');
        }
    }
    symbolizer_close(s);
    free(addrs);
    return 0;
}
