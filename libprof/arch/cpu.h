/* The few machine instructions the portable layers need, in the form of the
 * architecture being built: spinning, prefetching, static TLS, a hook's
 * entry registers, a fault's pc. Each architecture's forms are in its own
 * directory; code that only one architecture can run (the emitter, the
 * patchers) lives there too, and is built for it alone. */
#ifndef MEMPROF_ARCH_CPU_H
#define MEMPROF_ARCH_CPU_H
#if defined(__x86_64__)
#include "x86_64/cpu_x86_64.h"
#elif defined(__aarch64__)
#include "aarch64/cpu_aarch64.h"
#else
#error "memprof's runtime is built for x86-64 and aarch64 only"
#endif
#endif
