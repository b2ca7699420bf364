/* speedscope's JSON file format (https://www.speedscope.app/file-format-schema.json). */
#ifndef MEMPROF_TOOLS_SPEEDSCOPE_H
#define MEMPROF_TOOLS_SPEEDSCOPE_H
#include "../report/stacks.h"
#include <stdbool.h>
#include <stdio.h>

/* The stacks as one sampled profile named `name`, weighed in bytes (unit
 * "bytes") or objects (unit "none"): 0, or -1 when memory runs out. */
int speedscope_write(const struct stacks *s, FILE *out, const char *name, bool by_bytes, const char *exporter);
#endif
