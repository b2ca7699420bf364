/* memprof's own flame graph writer (SVG). */
#ifndef MEMPROF_TOOLS_FLAMEGRAPH_H
#define MEMPROF_TOOLS_FLAMEGRAPH_H
#include "../report/stacks.h"
#include <stdbool.h>
#include <stdio.h>

/* The stacks as an SVG flame graph, boxes as wide as their bytes
 * (`by_bytes`) or object counts: 0, or -1 on a write error. */
int flamegraph_write(const struct stacks *s, FILE *out, const char *title, bool by_bytes);
#endif
