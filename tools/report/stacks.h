/* Stacks with weights, read from any output memprof writes: the Ruby table
 * (with "from" lines for deeper sites), the C heap report (raw or named),
 * a Ruby heap dump (JSON lines), a pprof profile or collapsed stacks. What `memprof
 * collapse`, `memprof flamegraph` and `memprof diff` work on. */
#ifndef MEMPROF_TOOLS_STACKS_H
#define MEMPROF_TOOLS_STACKS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct stack {
    char *frames;          /* outermost first, separated by ';' */
    uint64_t count, bytes;
    uint64_t allocated;    /* a Ruby table's allocated column, when it has one */
};

struct stacks {
    struct stack *rows;
    size_t count, cap;
    bool have_bytes;       /* the input gave bytes, not only counts */
    bool have_allocated;   /* and allocated counts (a Ruby table with that column) */
    const char *kind;      /* "ruby", "heap", "dump", "pprof" or "collapsed" */
    bool short_of_memory;  /* while reading: a row or frame could not be kept */
};

/* Read `in` (named `name` for messages): 0, or -1 after a one-line message
 * on stderr (nothing memprof wrote, or memory ran out: never a report with
 * rows missing). Rows with the same frames are summed. */
int stacks_read(FILE *in, const char *name, struct stacks *out);
void stacks_free(struct stacks *s);
/* A Ruby table's "file:line:Class" (the first `n` bytes of `site`) split
 * at the colon that starts ":LINE:": where the file ends and the class
 * starts; false when it is not that shape. */
bool stacks_ruby_site_split(const char *site, size_t n, const char **file_end, const char **class_start);
/* The rows sorted by their frames (for merging and diffing). */
void stacks_sort_by_frames(struct stacks *s);
#endif
