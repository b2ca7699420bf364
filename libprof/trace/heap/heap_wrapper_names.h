/* The allocation wrappers memprof knows by name, shared by the runtime (which
 * unwinds past them) and the CLI (which names the first frame outside them).
 * Functions that allocate for their caller, as their libraries export them;
 * sorted, for bsearch. */
#ifndef MEMPROF_TRACE_HEAP_WRAPPER_NAMES_H
#define MEMPROF_TRACE_HEAP_WRAPPER_NAMES_H
#include <stdbool.h>
#include <string.h>

#define HEAP_WRAPPER_NAMES                                                                           \
    "__asprintf", "__asprintf_chk", "__getdelim", "__strdup", "__strndup", "__vasprintf_chk",        \
    "asprintf", "backtrace_symbols", "canonicalize_file_name", "g_aligned_alloc", "g_aligned_alloc0", \
    "g_malloc", "g_malloc0", "g_malloc0_n", "g_malloc_n", "g_memdup", "g_memdup2", "g_realloc",       \
    "g_realloc_n", "g_slice_alloc", "g_slice_alloc0", "g_slice_copy", "g_strconcat", "g_strdup",      \
    "g_strdup_printf", "g_strdup_vprintf", "g_strdupv", "g_strjoin", "g_strndup", "g_try_malloc",     \
    "g_try_malloc0", "g_try_malloc0_n", "g_try_malloc_n", "g_try_realloc", "g_try_realloc_n",         \
    "get_current_dir_name", "getcwd", "getdelim", "getline", "open_memstream", "open_wmemstream",     \
    "rb_alloc_tmp_buffer", "rb_alloc_tmp_buffer_with_count", "rb_xcalloc_mul_add",                    \
    "rb_xcalloc_mul_add_mul", "rb_xmalloc_mul_add", "rb_xmalloc_mul_add_mul", "rb_xrealloc_mul_add",  \
    "realpath", "ruby_strdup", "ruby_xcalloc", "ruby_xmalloc", "ruby_xmalloc2", "ruby_xrealloc",      \
    "ruby_xrealloc2", "scandir", "scandir64", "strdup", "strndup", "tempnam", "vasprintf", "wcsdup"

/* A mangled name in namespace std or __gnu_cxx (std::allocator, strings,
 * containers, streams), or an operator new: library code, also when a C++
 * program instantiated it from /usr/include. */
static inline bool heap_wrapper_is_std(const char *name)
{
    if (strncmp(name, "_Z", 2) != 0)
        return false;
    name += 2;
    if (name[0] == 'n' && (name[1] == 'w' || name[1] == 'a'))
        return true;   /* operator new, new[] */
    if (*name == 'N')
        name++;
    while (*name == 'K' || *name == 'V' || *name == 'r')
        name++;
    return (name[0] == 'S' && name[1] && strchr("tabsiod", name[1])) || strncmp(name, "9__gnu_cxx", 10) == 0;
}
#endif
