/* What memprof's SVG pictures share (flame graphs, timelines). */
#ifndef MEMPROF_TOOLS_SVG_H
#define MEMPROF_TOOLS_SVG_H
#include <stddef.h>
#include <stdio.h>

/* Text for an SVG element or attribute: markup characters escaped, control
 * characters dropped, at most `max` bytes of `s`. */
void svg_text(FILE *out, const char *s, size_t max);
#endif
