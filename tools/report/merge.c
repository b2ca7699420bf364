/* memprof merge: one table from several reports of one kind (the workers
 * of a forking server, or several runs), rows added by site.
 *
 * Each table is read by report_table.c; rows are added where the whole
 * site is the same; the merged table keeps the columns, each number's
 * width, and the order the first report's rows are in (the column they
 * fall by). Sections after the table (threads, strings, status lines) are
 * left out. Profiles (profile.proto) are merged by pprof.c. */
#include "../commands.h"
#include "../cli.h"
#include "../format/pprof.h"
#include "../input.h"
#include "../output.h"
#include "report_table.h"
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const struct cli_option merge_options[] = {
    CLI_VALUE("output", 'o', "FILE", "write the merged table or profile to FILE (mode 0600, replaced\n"
                                     "whole), not stdout"),
    { 0 },
};
static const struct cli_command merge_command = {
    .name = "merge", .operands = "REPORT...", .min_operands = 1, .max_operands = -1,
    .summary = "One table from several reports of one kind (a forking server's workers, several\n"
               "runs): Ruby tables or C heap reports, rows added by site (peak_bytes is the sum of\n"
               "each report's peak); or profiles (--pprof-proto) merged into one profile. Mixed\n"
               "kinds or a damaged file: one line naming the file, status 2.",
    .options = merge_options,
};

static void write_table(FILE *out, const struct report_table *t, char **names, int n)
{
    fprintf(out, "== memprof: live %s in %d reports merged %s ==\n", t->kind, n, t->columns);
    for (int i = 0; i < n; i++)
        fprintf(out, "# %s\n", names[i]);
    fprintf(out, "# the first's header: %s\n", t->header);
    uint64_t totals[TABLE_MAX_NUMBERS] = { 0 };
    for (size_t r = 0; r < t->count; r++) {
        for (int k = 0; k < t->numbers; k++) {
            fprintf(out, k ? " %*" PRIu64 : "%*" PRIu64, t->width[k], t->rows[r].v[k]);
            totals[k] += t->rows[r].v[k];
        }
        fprintf(out, " %s\n", t->rows[r].site);
    }
    /* The first column is a count; the second, when the columns name bytes, the bytes. */
    fprintf(out, "memprof: %d reports merged: %zu sites, %" PRIu64 " live", n, t->count, totals[0]);
    if (t->numbers > 1 && strncmp(t->columns, "(count bytes", 12) == 0)
        fprintf(out, ", %" PRIu64 " bytes", totals[1]);
    fputc('\n', out);
}

int cmd_merge(int argc, char **argv)
{
    const char *output = NULL;
    struct cli_args a;
    int k;
    cli_begin(&a, &merge_command, argc, argv);
    while ((k = cli_next(&a)) >= 0)
        output = a.value;
    if (k != CLI_END)
        return cli_status(k);
    int n = a.operand_count;
    FILE **ins = calloc((size_t)n, sizeof *ins);
    if (!ins) {
        fputs("memprof: merge: out of memory\n", stderr);
        return EXIT_FAILED;
    }
    int rc = 0, profiles = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        if (!(ins[i] = input_open(a.operands[i]))) {
            fprintf(stderr, "memprof: merge: cannot read %s: %s\n", a.operands[i], strerror(errno));
            rc = EXIT_USAGE;
        } else if (pprof_looks_like(ins[i])) {
            profiles++;
        }
        if (rc == 0 && profiles && profiles != i + 1) {
            bool profile = pprof_looks_like(ins[i]);
            fprintf(stderr, "memprof: merge: %s: %s, where %s is %s\n", a.operands[i],
                    profile ? "a profile" : "a text report", a.operands[0], profile ? "a text report" : "a profile");
            rc = EXIT_USAGE;
        }
    }
    struct report_table t = { 0 };
    for (int i = 0; i < n && rc == 0 && !profiles; i++)
        rc = report_table_read(ins[i], a.operands[i], "merge", i == 0, &t);
    struct output out;
    if (rc == 0 && (rc = output_open(&out, output)) == 0) {
        if (profiles) {
            rc = pprof_merge(ins, (const char *const *)a.operands, (size_t)n, out.fp);
        } else {
            report_table_add_up(&t, t.sort_column);
            write_table(out.fp, &t, a.operands, n);
        }
        int closed = output_close(&out, rc != 0);
        rc = rc ? rc : closed;
    }
    for (int i = 0; i < n; i++)
        if (ins[i])
            input_close(ins[i]);
    free(ins);
    report_table_free(&t);
    return rc;
}
