/* Stdin read to its end at exit: see input.h. */
#include "input.h"
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Only a pipe or socket: a terminal or file on stdin has no writer to
 * break, and draining a terminal would wait for the user. */
static void drain_stdin(void)
{
    struct stat st;
    if (fstat(STDIN_FILENO, &st) != 0 || !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
        return;
    char buf[65536];
    for (;;) {
        ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
        if (n > 0 || (n < 0 && errno == EINTR))
            continue;
        break;
    }
}

FILE *input_stdin(void)
{
    static bool registered;
    if (!registered)
        registered = atexit(drain_stdin) == 0;
    return stdin;
}

FILE *input_open(const char *path)
{
    return strcmp(path, "-") == 0 ? input_stdin() : fopen(path, "r");
}

void input_close(FILE *in)
{
    if (in && in != stdin)
        fclose(in);
}
