/* A JSON string for what the CLI writes as JSON (the Ruby dump from a core,
 * speedscope's file): quotes and backslashes escaped, control characters as
 * \u00XX. */
#ifndef MEMPROF_TOOLS_JSON_H
#define MEMPROF_TOOLS_JSON_H
#include <stddef.h>
#include <stdio.h>

static inline void json_string(FILE *out, const char *s, size_t len)
{
    fputc('"', out);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}
#endif
