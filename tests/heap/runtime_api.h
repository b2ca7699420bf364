/* The runtime's report API as a program run under `memprof run --heap` finds
 * it (dlsym: the program does not link libmemprof). */
#ifndef MEMPROF_TESTS_HEAP_RUNTIME_API_H
#define MEMPROF_TESTS_HEAP_RUNTIME_API_H
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>

typedef int report_fn(int kind, int flags, unsigned long top, unsigned since, const char *filter, const char *path);
typedef const char *text_fn(void);

/* memprof_report and memprof_text, or false (and a line naming `program`). */
static inline bool runtime_api(const char *program, report_fn **report, text_fn **text)
{
    *(void **)report = dlsym(RTLD_DEFAULT, "memprof_report");
    *(void **)text = dlsym(RTLD_DEFAULT, "memprof_text");
    if (*report && *text)
        return true;
    fprintf(stderr, "%s: run me under memprof run --heap\n", program);
    return false;
}
#endif
