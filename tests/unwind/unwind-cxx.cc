// memprof's unwinder against libunwind's in C++: inside a catch block, and
// in a destructor that runs while an exception propagates (the unwinder of
// libgcc's personality routine and _Unwind_RaiseException above it).
extern "C" {
#include "../../libprof/unwind/backtrace.h"
}
#include "../tap.h"
#include <dlfcn.h>
#include <stdexcept>
#include <string.h>

#define MAX 64
static int (*libunwind_backtrace)(void **, int);
static struct unwind_cache cache;
static int answered;

__attribute__((noinline)) static void compare(const char *where)
{
    void *mine[MAX], *theirs[MAX];
    int n = unwind_backtrace(&cache, 1, mine, MAX);
    int m = libunwind_backtrace(theirs, MAX);
    if (n < 0) {
        ok(m > 0, "%s: memprof's unwinder cannot say, libunwind answers (%d frames)", where, m);
        return;
    }
    answered++;
    bool same = n == m && n > 1 && memcmp(mine + 1, theirs + 1, (size_t)(n - 1) * sizeof *mine) == 0;
    ok(same, "%s: %d frames, the same return addresses as libunwind's", where, n - 1);
    if (!same)
        for (int i = 0; i < (n > m ? n : m); i++)
            printf("#   %2d  %18p  %18p\n", i, i < n ? mine[i] : NULL, i < m ? theirs[i] : NULL);
}

struct Guard {
    ~Guard() { compare("a destructor run by the exception's unwinding"); }
};

__attribute__((noinline)) static void thrower(int depth)
{
    Guard g;
    if (depth == 0)
        throw std::runtime_error("unwinding");
    thrower(depth - 1);
}

int main()
{
    void *lib = dlopen("libunwind.so.8", RTLD_NOW);
    *(void **)&libunwind_backtrace = lib ? dlsym(lib, "unw_backtrace") : NULL;
    if (!libunwind_backtrace) {
        printf("Bail out! libunwind.so.8 is needed to compare with\n");
        return 1;
    }
    try {
        thrower(3);
    } catch (const std::exception &e) {
        compare("a catch block");
    }
    ok(answered >= 1, "memprof's unwinder answered in the catch block (%d checkpoints)", answered);
    return tap_done();
}
