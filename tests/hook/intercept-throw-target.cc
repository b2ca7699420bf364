// C++ functions for intercept-throw: exceptions thrown through frames whose
// return goes through memprof's return stub.
#include <stdexcept>

extern "C" int target_throw(int n)
{
    if (n < 0)
        throw std::runtime_error("thrown through a hooked frame");
    return n * 2;
}

extern "C" int target_throw_nested(int n)
{
    return target_throw(n) + 1;   // through the PLT: hooked too
}
