#include "svg.h"

void svg_text(FILE *out, const char *s, size_t max)
{
    for (size_t i = 0; s[i] && i < max; i++) {
        switch (s[i]) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&apos;", out); break;
        default:
            if ((unsigned char)s[i] >= 0x20)
                fputc(s[i], out);
        }
    }
}
