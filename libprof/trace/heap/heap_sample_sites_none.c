/* heap_sample_sites.h where memprof cannot patch code (a build for aarch64):
 * no call site is changed, and sampling runs through the GOT hooks alone. */
#include "heap_sample_sites.h"

void heap_sample_sites_enable(const struct sample_stub_targets *targets)
{
    (void)targets;
}

void heap_sample_sites_restore(void)
{
}

void heap_sample_sites_offer(uintptr_t ret, enum sample_site_kind kind)
{
    (void)ret;
    (void)kind;
}

size_t heap_sample_sites_count(void)
{
    return 0;
}

void heap_sample_sites_after_fork(void)
{
}
