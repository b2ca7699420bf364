/* A table of memprof's text reports read as it is written: its header
 * names the kind ("live Ruby objects", "live C heap blocks") and the
 * columns, the numbers before the last one; a row is those numbers and the
 * site, and the indented lines under it ("from", "inlined into", "ruby")
 * are part of the site. What `memprof merge` adds up and `memprof top`
 * shows. */
#ifndef MEMPROF_TOOLS_REPORT_TABLE_H
#define MEMPROF_TOOLS_REPORT_TABLE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TABLE_MAX_NUMBERS 6   /* a table's numeric columns: the C heap report has 4 */

struct table_row {
    char *site;   /* the text after the numbers, and the lines under the row */
    uint64_t v[TABLE_MAX_NUMBERS];
};

struct report_table {
    const char *kind; /* "Ruby objects", "C heap blocks" */
    char *columns;    /* "(count bytes peak_bytes allocs site)" */
    char *header;     /* the first report's */
    int numbers;
    int width[TABLE_MAX_NUMBERS];   /* each number's, in the first report */
    int sort_column;  /* the first report's rows fall by it */
    struct table_row *rows;
    size_t count, cap;
};

/* One report's table added to `t` (its kind and columns set by the first;
 * another's must be the same): 0, or 2 after a one-line message naming
 * `name` ("memprof: CMD: ..."), or 1 when memory runs out. */
int report_table_read(FILE *in, const char *name, const char *cmd, bool first, struct report_table *t);
/* Rows with the same site added into one, then sorted by `column`,
 * largest first (ties by site), or left sorted by site when `column` < 0. */
void report_table_add_up(struct report_table *t, int column);
void report_table_free(struct report_table *t);
#endif
