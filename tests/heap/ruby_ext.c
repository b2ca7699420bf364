/* A Ruby C extension that leaks into the C heap, for heap-ruby.test: each
 * LEAK mark names a line the report must show, and the Ruby script's marks
 * name the lines that called it. */
#include <ruby.h>
#include <stdlib.h>
#include <string.h>

/* Where each block goes: the compiler may not drop an allocation whose
 * pointer is stored here. */
void *volatile ruby_ext_sink;

static VALUE leak(VALUE self, VALUE bytes)
{
    (void)self;
    char *p = malloc(NUM2SIZET(bytes));   /* LEAK:leak */
    ruby_ext_sink = p;
    return Qnil;
}

/* Held, then given back: never in a report of what is live. */
static VALUE churn(VALUE self, VALUE times)
{
    (void)self;
    for (long i = 0; i < NUM2LONG(times); i++) {
        ruby_ext_sink = malloc(64);
        free(ruby_ext_sink);
    }
    return Qnil;
}

static __attribute__((noinline)) char *keep_copy(const char *s)
{
    char *copy = strdup(s);   /* LEAK:strdup */
    ruby_ext_sink = copy;     /* after the call: not a tail call */
    return copy;
}

static VALUE keep(VALUE self, VALUE text)
{
    (void)self;
    keep_copy(StringValueCStr(text));
    return Qnil;
}

/* Through Ruby's allocator (ruby_xmalloc, as ALLOC_N and most extensions
 * allocate): charged to this function, not to Ruby's allocator. */
static VALUE keep_buffer(VALUE self, VALUE count)
{
    (void)self;
    long *buffer = ALLOC_N(long, NUM2LONG(count));   /* LEAK:xmalloc */
    ruby_ext_sink = buffer;
    return Qnil;
}

void Init_ruby_ext(void)
{
    VALUE m = rb_define_module("LeakyExt");
    rb_define_module_function(m, "leak", leak, 1);
    rb_define_module_function(m, "churn", churn, 1);
    rb_define_module_function(m, "keep", keep, 1);
    rb_define_module_function(m, "keep_buffer", keep_buffer, 1);
}
