/* What memprof relies on of the Ruby VM's ABI (CRuby 3.1, x86-64), written
 * out here instead of including ruby.h: ruby.h redefines snprintf and would
 * link the runtime to libruby, breaking every non-Ruby process that inherits
 * LD_PRELOAD. Every rb_* function is resolved at run time with dlsym. */
#ifndef MEMPROF_TRACE_RUBY_ABI_H
#define MEMPROF_TRACE_RUBY_ABI_H
#include <stddef.h>
#include <stdint.h>

typedef uintptr_t VALUE;

/* struct RBasic: every heap object starts with these two words. */
struct ruby_basic { VALUE flags; VALUE klass; };

enum ruby_type {
    RUBY_T_NONE = 0x00, RUBY_T_OBJECT = 0x01, RUBY_T_CLASS = 0x02, RUBY_T_MODULE = 0x03,
    RUBY_T_FLOAT = 0x04, RUBY_T_STRING = 0x05, RUBY_T_REGEXP = 0x06, RUBY_T_ARRAY = 0x07,
    RUBY_T_HASH = 0x08, RUBY_T_STRUCT = 0x09, RUBY_T_BIGNUM = 0x0a, RUBY_T_FILE = 0x0b,
    RUBY_T_DATA = 0x0c, RUBY_T_MATCH = 0x0d, RUBY_T_COMPLEX = 0x0e, RUBY_T_RATIONAL = 0x0f,
    RUBY_T_NIL = 0x11, RUBY_T_TRUE = 0x12, RUBY_T_FALSE = 0x13, RUBY_T_SYMBOL = 0x14,
    RUBY_T_FIXNUM = 0x15, RUBY_T_UNDEF = 0x16, RUBY_T_IMEMO = 0x1a, RUBY_T_NODE = 0x1b,
    RUBY_T_ICLASS = 0x1c, RUBY_T_ZOMBIE = 0x1d, RUBY_T_MOVED = 0x1e, RUBY_T_MASK = 0x1f,
};

/* Heap pages are 16 KiB-aligned in 3.1; each starts with a pointer to its
 * page descriptor, which the GC reads to test mark bits during a lazy sweep. */
#define RUBY_HEAP_PAGE_ALIGN ((uintptr_t)1 << 14)

/* The allocators memprof hooks (internal/gc.h in 3.1; size is unused there). */
typedef VALUE rb_wb_newobj_fn(VALUE klass, VALUE flags, size_t size);
typedef VALUE rb_ec_wb_newobj_fn(void *ec, VALUE klass, VALUE flags, size_t size);
typedef VALUE rb_newobj_fn(VALUE klass, VALUE flags);

/* Exported functions the tracer calls; none of them allocates. */
struct ruby_api {
    const char *(*rb_sourcefile)(void);
    int (*rb_sourceline)(void);
    VALUE (*rb_class_path_cached)(VALUE klass);
    char *(*rb_string_value_ptr)(volatile VALUE *str);
    int (*rb_objspace_markable_object_p)(VALUE obj);
    int (*rb_during_gc)(void);
    int (*rb_postponed_job_register_one)(unsigned flags, void (*job)(void *), void *data);
    void (*rb_set_end_proc)(void (*func)(VALUE), VALUE data);
};
#endif
