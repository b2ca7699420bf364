/* State shared by the tracer's hooks (ruby.c) and its report (ruby_report.c). */
#ifndef MEMPROF_TRACE_RUBY_STATE_H
#define MEMPROF_TRACE_RUBY_STATE_H
#include "ruby_abi.h"
#include "../store/addr_table.h"
#include "../store/sites.h"
#include "../util/spinlock.h"

struct ruby_tracer {
    struct ruby_api api;
    spinlock_t lock;              /* guards objects and sites */
    struct addr_table objects;    /* address -> site, type, class */
    struct site_table sites;
    unsigned long dropped;        /* records lost to memory exhaustion */
};

extern struct ruby_tracer ruby_tracer;
#endif
