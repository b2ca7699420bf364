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

/* struct RString as Debian's 3.1 is built (USE_RVARGC 0): up to 23 bytes in
 * the object, the length in its flags; else a length and a pointer. */
struct ruby_string {
    struct ruby_basic basic;
    union {
        struct { long len; char *ptr; VALUE aux; } heap;
        char embed[24];
    } as;
};
#define RUBY_STR_NOEMBED ((VALUE)1 << 13)             /* RUBY_FL_USER1 */
#define RUBY_STR_EMBED_LEN_SHIFT 14                   /* RUBY_FL_USHIFT + 2 */
#define RUBY_STR_EMBED_LEN_MASK ((VALUE)0x1f << 14)   /* RUBY_FL_USER2 ... USER6 */

enum ruby_type {
    RUBY_T_NONE = 0x00, RUBY_T_OBJECT = 0x01, RUBY_T_CLASS = 0x02, RUBY_T_MODULE = 0x03,
    RUBY_T_FLOAT = 0x04, RUBY_T_STRING = 0x05, RUBY_T_REGEXP = 0x06, RUBY_T_ARRAY = 0x07,
    RUBY_T_HASH = 0x08, RUBY_T_STRUCT = 0x09, RUBY_T_BIGNUM = 0x0a, RUBY_T_FILE = 0x0b,
    RUBY_T_DATA = 0x0c, RUBY_T_MATCH = 0x0d, RUBY_T_COMPLEX = 0x0e, RUBY_T_RATIONAL = 0x0f,
    RUBY_T_NIL = 0x11, RUBY_T_TRUE = 0x12, RUBY_T_FALSE = 0x13, RUBY_T_SYMBOL = 0x14,
    RUBY_T_FIXNUM = 0x15, RUBY_T_UNDEF = 0x16, RUBY_T_IMEMO = 0x1a, RUBY_T_NODE = 0x1b,
    RUBY_T_ICLASS = 0x1c, RUBY_T_ZOMBIE = 0x1d, RUBY_T_MOVED = 0x1e, RUBY_T_MASK = 0x1f,
};

/* "T_STRING" for a type (the reports' and the dump's name for it). */
static inline const char *ruby_type_name(unsigned type)
{
    static const char *const names[RUBY_T_MASK + 1] = {
        [RUBY_T_NONE] = "T_NONE", [RUBY_T_OBJECT] = "T_OBJECT", [RUBY_T_CLASS] = "T_CLASS",
        [RUBY_T_MODULE] = "T_MODULE", [RUBY_T_FLOAT] = "T_FLOAT", [RUBY_T_STRING] = "T_STRING",
        [RUBY_T_REGEXP] = "T_REGEXP", [RUBY_T_ARRAY] = "T_ARRAY", [RUBY_T_HASH] = "T_HASH",
        [RUBY_T_STRUCT] = "T_STRUCT", [RUBY_T_BIGNUM] = "T_BIGNUM", [RUBY_T_FILE] = "T_FILE",
        [RUBY_T_DATA] = "T_DATA", [RUBY_T_MATCH] = "T_MATCH", [RUBY_T_COMPLEX] = "T_COMPLEX",
        [RUBY_T_RATIONAL] = "T_RATIONAL", [RUBY_T_SYMBOL] = "T_SYMBOL", [RUBY_T_IMEMO] = "T_IMEMO",
        [RUBY_T_NODE] = "T_NODE", [RUBY_T_ICLASS] = "T_ICLASS",
    };
    const char *n = type <= RUBY_T_MASK ? names[type] : NULL;
    return n ? n : "T_UNKNOWN";
}

/* Heap pages are 16 KiB-aligned in 3.1; each starts with a pointer to its
 * page descriptor, which the GC reads to test mark bits during a lazy sweep. */
#define RUBY_HEAP_PAGE_ALIGN ((uintptr_t)1 << 14)
/* Every heap object sits in a 40-byte slot (sizeof(RVALUE)) at an address
 * that is a multiple of 40 (gc.c aligns each page's first slot so). */
#define RUBY_SLOT_SIZE 40

#define RUBY_QNIL ((VALUE)8)
/* FL_SINGLETON (FL_USER0) on a T_CLASS: a singleton class (a metaclass). */
#define RUBY_FL_SINGLETON ((VALUE)1 << 12)
/* struct RClass starts with its RBasic and its superclass: rb_class_real
 * follows it past singleton classes and included modules (T_ICLASS). */
#define RUBY_CLASS_SUPER_OFFSET 16

/* The running thread's control frame (vm_core.h): ruby_current_ec is a TLS
 * variable; the execution context starts with its VM stack (base, size in
 * words) and then the current frame, whose first word is its pc and fifth its
 * ep; ep[0] holds the frame's flags. Frames are 8 words (3.1 added YJIT's
 * jit_return) and grow down from the stack's end: a frame's caller is the
 * next one up. */
#define RUBY_EC_VM_STACK_OFFSET 0
#define RUBY_EC_VM_STACK_SIZE_OFFSET 8
#define RUBY_EC_CFP_OFFSET 16
#define RUBY_CFP_SIZE 64
#define RUBY_CFP_ISEQ_OFFSET 16
#define RUBY_CFP_EP_OFFSET 32
#define RUBY_FRAME_FLAG_CFRAME 0x0080

/* Whose execution context is whose (vm_core.h, ractor_core.h; CRuby 3.1,
 * read off Debian's libruby 3.1.2 and checked by ruby-layout.test): rb_vm_t's
 * ractor.main_thread (ruby_vm_destruct clears it before freeing the main
 * thread); rb_ractor_t's threads.gvl.owner, the rb_thread_t holding the
 * GVL, NULL while nobody does; rb_thread_t's ractor, ec (the running fiber's
 * context) and thread_id (its pthread_t). RUBY_LAYOUT_VERSION: the releases
 * these hold for, a prefix of ruby_version. */
#define RUBY_LAYOUT_VERSION "3.1."
/* Where a layout differs by architecture, RUBY_BY_ARCH(x86-64's, aarch64's):
 * the same types, but a pthread_mutex_t is 40 bytes on x86-64 and 48 on
 * aarch64 (rb_ractor_t's sync.lock comes before the GVL, the GVL's own lock
 * before main); aarch64's read off Debian's arm64 libruby 3.1.2 under
 * qemu-aarch64 (aarch64-runtime.test). */
#if defined(__aarch64__)
#define RUBY_BY_ARCH(x86_64, aarch64) (aarch64)
#else
#define RUBY_BY_ARCH(x86_64, aarch64) (x86_64)
#endif
#define RUBY_VM_MAIN_THREAD_OFFSET 0x28
#define RUBY_RACTOR_GVL_OWNER_OFFSET RUBY_BY_ARCH(0x150, 0x158)
#define RUBY_RACTOR_MAIN_THREAD_OFFSET RUBY_BY_ARCH(0x210, 0x220)
#define RUBY_THREAD_RACTOR_OFFSET 24
#define RUBY_THREAD_EC_OFFSET 40
#define RUBY_THREAD_ID_OFFSET 80

/* The allocators memprof hooks (internal/gc.h in 3.1; size is unused there). */
typedef VALUE rb_wb_newobj_fn(VALUE klass, VALUE flags, size_t size);
typedef VALUE rb_ec_wb_newobj_fn(void *ec, VALUE klass, VALUE flags, size_t size);
typedef VALUE rb_newobj_fn(VALUE klass, VALUE flags);
typedef void ruby_data_func(void *);
typedef VALUE rb_data_object_wrap_fn(VALUE klass, void *data, ruby_data_func *mark,
                                     ruby_data_func *free);
struct ruby_data_type;
typedef VALUE rb_data_typed_object_wrap_fn(VALUE klass, void *data,
                                           const struct ruby_data_type *type);
typedef VALUE rb_imemo_new_fn(unsigned type, VALUE v1, VALUE v2, VALUE v3, VALUE v0);
/* A class's allocator (rb_alloc_func_t): T_OBJECT instances come from the one
 * BasicObject defines (and Exception's, which tail-calls it), an internal
 * function with no GOT slot; memprof wraps the allocator itself. */
typedef VALUE ruby_alloc_func(VALUE klass);
typedef void rb_define_alloc_func_fn(VALUE klass, ruby_alloc_func *func);

/* rb_data_type_t: dcompact is called while the GC updates references after
 * moving objects, when rb_gc_location() still knows where each one went. */
struct ruby_data_type {
    const char *wrap_struct_name;
    struct {
        ruby_data_func *dmark, *dfree;
        size_t (*dsize)(const void *);
        ruby_data_func *dcompact;
        void *reserved[1];
    } function;
    const struct ruby_data_type *parent;
    void *data;
    VALUE flags;
};

/* Exported functions and variables the tracer uses. None of the functions
 * allocates, but for rb_data_typed_object_wrap and rb_gc_register_mark_object,
 * which run only at a Ruby safe point (a postponed job). */
struct ruby_api {
    const char *(*rb_sourcefile)(void);
    int (*rb_sourceline)(void);
    VALUE (*rb_class_path_cached)(VALUE klass);
    char *(*rb_string_value_ptr)(volatile VALUE *str);
    int (*rb_objspace_markable_object_p)(VALUE obj);
    int (*rb_during_gc)(void);
    size_t (*rb_gc_count)(void);
    int (*rb_postponed_job_register_one)(unsigned flags, void (*job)(void *), void *data);
    void (*rb_set_end_proc)(void (*func)(VALUE), VALUE data);
    int (*rb_profile_frames)(int start, int limit, VALUE *frames, int *lines);
    VALUE (*rb_profile_frame_path)(VALUE frame);
    VALUE (*rb_class_real)(VALUE klass);
    ruby_alloc_func *(*rb_get_alloc_func)(VALUE klass);
    rb_define_alloc_func_fn *rb_define_alloc_func;
    VALUE (*rb_gc_location)(VALUE obj);
    rb_data_typed_object_wrap_fn *rb_data_typed_object_wrap;
    void (*rb_gc_register_mark_object)(VALUE obj);
    int (*ruby_thread_has_gvl_p)(void);
    VALUE *rb_cBasicObject, *rb_eException;  /* variables: 0 until the VM's Init */
    void **ruby_current_vm_ptr;              /* NULL until the VM exists */
    void **ruby_single_main_ractor;          /* NULL once a second Ractor exists */
    /* Optional (NULL if absent): the report then shows no bytes; C blocks
     * then get no Ruby line (no thread layout is trusted). */
    size_t (*rb_obj_memsize_of)(VALUE obj);
    void (*rb_gc)(void);                     /* a full GC, swept at once: retained objects */
    /* Every heap page's slots, at a safe point (the classes made before a
     * late start, whose allocators memprof wraps then). */
    void (*rb_objspace_each_objects)(int (*each)(void *start, void *end, size_t stride, void *data), void *data);
    int (*ruby_native_thread_p)(void);       /* a thread of the VM's (a postponed job may be asked) */
    const char *ruby_version;                /* "3.1.2" */
};
#endif
