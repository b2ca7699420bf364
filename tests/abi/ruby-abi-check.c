/* trace/ruby_abi.h against the ruby.h it stands in for, at compile time: the
 * runtime cannot include ruby.h (tests/Makefile.am says why it is only here),
 * so every fact it restates that ruby.h also states is checked here, and a
 * Ruby whose headers differ fails the build of the suite. (The VM's internal
 * layouts, RUBY_SLOT_SIZE and the execution context's offsets, are not in
 * ruby.h: ruby-coverage.test and the field tests check them by running.) */

/* ruby_abi.h's names that ruby.h also defines, renamed while it is read. */
#define RUBY_T_NONE ABI_T_NONE
#define RUBY_T_OBJECT ABI_T_OBJECT
#define RUBY_T_CLASS ABI_T_CLASS
#define RUBY_T_MODULE ABI_T_MODULE
#define RUBY_T_FLOAT ABI_T_FLOAT
#define RUBY_T_STRING ABI_T_STRING
#define RUBY_T_REGEXP ABI_T_REGEXP
#define RUBY_T_ARRAY ABI_T_ARRAY
#define RUBY_T_HASH ABI_T_HASH
#define RUBY_T_STRUCT ABI_T_STRUCT
#define RUBY_T_BIGNUM ABI_T_BIGNUM
#define RUBY_T_FILE ABI_T_FILE
#define RUBY_T_DATA ABI_T_DATA
#define RUBY_T_MATCH ABI_T_MATCH
#define RUBY_T_COMPLEX ABI_T_COMPLEX
#define RUBY_T_RATIONAL ABI_T_RATIONAL
#define RUBY_T_NIL ABI_T_NIL
#define RUBY_T_TRUE ABI_T_TRUE
#define RUBY_T_FALSE ABI_T_FALSE
#define RUBY_T_SYMBOL ABI_T_SYMBOL
#define RUBY_T_FIXNUM ABI_T_FIXNUM
#define RUBY_T_UNDEF ABI_T_UNDEF
#define RUBY_T_IMEMO ABI_T_IMEMO
#define RUBY_T_NODE ABI_T_NODE
#define RUBY_T_ICLASS ABI_T_ICLASS
#define RUBY_T_ZOMBIE ABI_T_ZOMBIE
#define RUBY_T_MOVED ABI_T_MOVED
#define RUBY_T_MASK ABI_T_MASK
#include "trace/ruby/ruby_abi.h"
static const VALUE abi_qnil = RUBY_QNIL, abi_fl_singleton = RUBY_FL_SINGLETON;
#undef RUBY_FL_SINGLETON
#undef RUBY_T_NONE
#undef RUBY_T_OBJECT
#undef RUBY_T_CLASS
#undef RUBY_T_MODULE
#undef RUBY_T_FLOAT
#undef RUBY_T_STRING
#undef RUBY_T_REGEXP
#undef RUBY_T_ARRAY
#undef RUBY_T_HASH
#undef RUBY_T_STRUCT
#undef RUBY_T_BIGNUM
#undef RUBY_T_FILE
#undef RUBY_T_DATA
#undef RUBY_T_MATCH
#undef RUBY_T_COMPLEX
#undef RUBY_T_RATIONAL
#undef RUBY_T_NIL
#undef RUBY_T_TRUE
#undef RUBY_T_FALSE
#undef RUBY_T_SYMBOL
#undef RUBY_T_FIXNUM
#undef RUBY_T_UNDEF
#undef RUBY_T_IMEMO
#undef RUBY_T_NODE
#undef RUBY_T_ICLASS
#undef RUBY_T_ZOMBIE
#undef RUBY_T_MOVED
#undef RUBY_T_MASK
#include <ruby.h>
#include <ruby/debug.h>
#include <stddef.h>
#include <stdio.h>

#define SAME(a, b) _Static_assert((long)(a) == (long)(b), #a " is " #b " in ruby.h")
SAME(ABI_T_NONE, RUBY_T_NONE);
SAME(ABI_T_OBJECT, RUBY_T_OBJECT);
SAME(ABI_T_CLASS, RUBY_T_CLASS);
SAME(ABI_T_MODULE, RUBY_T_MODULE);
SAME(ABI_T_FLOAT, RUBY_T_FLOAT);
SAME(ABI_T_STRING, RUBY_T_STRING);
SAME(ABI_T_REGEXP, RUBY_T_REGEXP);
SAME(ABI_T_ARRAY, RUBY_T_ARRAY);
SAME(ABI_T_HASH, RUBY_T_HASH);
SAME(ABI_T_STRUCT, RUBY_T_STRUCT);
SAME(ABI_T_BIGNUM, RUBY_T_BIGNUM);
SAME(ABI_T_FILE, RUBY_T_FILE);
SAME(ABI_T_DATA, RUBY_T_DATA);
SAME(ABI_T_MATCH, RUBY_T_MATCH);
SAME(ABI_T_COMPLEX, RUBY_T_COMPLEX);
SAME(ABI_T_RATIONAL, RUBY_T_RATIONAL);
SAME(ABI_T_NIL, RUBY_T_NIL);
SAME(ABI_T_TRUE, RUBY_T_TRUE);
SAME(ABI_T_FALSE, RUBY_T_FALSE);
SAME(ABI_T_SYMBOL, RUBY_T_SYMBOL);
SAME(ABI_T_FIXNUM, RUBY_T_FIXNUM);
SAME(ABI_T_UNDEF, RUBY_T_UNDEF);
SAME(ABI_T_IMEMO, RUBY_T_IMEMO);
SAME(ABI_T_NODE, RUBY_T_NODE);
SAME(ABI_T_ICLASS, RUBY_T_ICLASS);
SAME(ABI_T_ZOMBIE, RUBY_T_ZOMBIE);
SAME(ABI_T_MOVED, RUBY_T_MOVED);
SAME(ABI_T_MASK, RUBY_T_MASK);
SAME(sizeof(struct ruby_basic), sizeof(struct RBasic));
SAME(offsetof(struct ruby_basic, flags), offsetof(struct RBasic, flags));
SAME(offsetof(struct ruby_basic, klass), offsetof(struct RBasic, klass));
SAME(sizeof(struct ruby_data_type), sizeof(rb_data_type_t));
SAME(offsetof(struct ruby_data_type, function.dmark), offsetof(rb_data_type_t, function.dmark));
SAME(offsetof(struct ruby_data_type, function.dfree), offsetof(rb_data_type_t, function.dfree));
SAME(offsetof(struct ruby_data_type, function.dsize), offsetof(rb_data_type_t, function.dsize));
SAME(offsetof(struct ruby_data_type, function.dcompact), offsetof(rb_data_type_t, function.dcompact));
SAME(offsetof(struct ruby_data_type, parent), offsetof(rb_data_type_t, parent));
SAME(offsetof(struct ruby_data_type, data), offsetof(rb_data_type_t, data));
SAME(offsetof(struct ruby_data_type, flags), offsetof(rb_data_type_t, flags));
SAME(sizeof(struct ruby_string), sizeof(struct RString));
SAME(offsetof(struct ruby_string, as.heap.len), offsetof(struct RString, as.heap.len));
SAME(offsetof(struct ruby_string, as.heap.ptr), offsetof(struct RString, as.heap.ptr));
SAME(offsetof(struct ruby_string, as.embed), offsetof(struct RString, as.embed.ary));
SAME(sizeof(((struct ruby_string *)0)->as.embed), sizeof(((struct RString *)0)->as.embed.ary));
SAME(RUBY_STR_NOEMBED, RSTRING_NOEMBED);
SAME(RUBY_STR_EMBED_LEN_SHIFT, RSTRING_EMBED_LEN_SHIFT);
SAME(RUBY_STR_EMBED_LEN_MASK, RSTRING_EMBED_LEN_MASK);

/* Each exported function the tracer resolves with dlsym: the type it calls
 * it by is the type ruby.h declares. */
#define FN(field)                                                                                   \
    _Static_assert(__builtin_types_compatible_p(__typeof__(((struct ruby_api *)0)->field), __typeof__(&field)), \
                   "struct ruby_api's " #field " has ruby.h's type")
FN(rb_sourcefile);
FN(rb_sourceline);
FN(rb_class_path_cached);
FN(rb_string_value_ptr);
FN(rb_during_gc);
FN(rb_gc_count);
FN(rb_gc);
FN(rb_postponed_job_register_one);
FN(rb_set_end_proc);
FN(rb_profile_frames);
FN(rb_profile_frame_path);
FN(rb_class_real);
FN(rb_get_alloc_func);
FN(rb_define_alloc_func);
FN(rb_gc_location);
FN(rb_gc_register_mark_object);

int main(void)
{
    /* Values that are not constant expressions in ruby.h. */
    int ok_nil = abi_qnil == Qnil, ok_singleton = abi_fl_singleton == RUBY_FL_SINGLETON;
    printf("%sok 1 - RUBY_QNIL is ruby.h's Qnil\n", ok_nil ? "" : "not ");
    printf("%sok 2 - RUBY_FL_SINGLETON is ruby.h's\n", ok_singleton ? "" : "not ");
    printf("ok 3 - every type, layout and prototype ruby_abi.h shares with ruby.h (checked when this was compiled)\n");
    printf("1..3\n");
    return ok_nil && ok_singleton ? 0 : 1;
}
