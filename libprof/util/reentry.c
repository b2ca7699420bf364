#include "reentry.h"

/* The heap hooks' empty record (heap_hooks.c): what a thread's short paths
 * read before it has a record of its own. Weak: libprof-core alone (the
 * tests' hook drivers) has no heap hooks, and no short path to read it. */
extern struct heap_thread heap_no_record __attribute__((weak));

__thread struct thread_words memprof_thread_words
    __attribute__((tls_model("initial-exec"))) = { .heap_short_path = &heap_no_record };
