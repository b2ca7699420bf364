/* Functions for intercept-check to hook: called through the program's GOT. */
#include <stdarg.h>

long target_sum6(long a, long b, long c, long d, long e, long f)
{
    return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f;
}

double target_scale(double x, double y)
{
    return x * y;
}

/* Varargs: the caller sets %al to the number of vector registers used. */
double target_sum_doubles(int n, ...)
{
    va_list ap;
    double s = 0;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        s += va_arg(ap, double);
    va_end(ap);
    return s;
}

/* Calls back into the program: recursion through a hooked function. */
long target_via(long n, long (*back)(long))
{
    return back(n) + 0;
}

/* Calls `cb`, which may longjmp out past this frame. */
int target_call(void (*cb)(void))
{
    cb();
    return 1;
}
