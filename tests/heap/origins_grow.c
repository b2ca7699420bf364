/* One call site allocates again and again while 200 others, each a strdup
 * (a wrapper: its origin has a link, so it is not the thread's last site),
 * add origins until the thread's origin array is copied to a larger one
 * twice: the short path's record of its last site must follow the copy.
 * GROW:site's row: 600 blocks of 40 bytes. */
#include <stdlib.h>
#include <string.h>

void *volatile keep[1000];
static int kept;

static __attribute__((noinline)) void at_site(void)
{
    keep[kept++] = malloc(40);   /* GROW:site */
}

#define WRAPPED(i)                                                    \
    static __attribute__((noinline)) void wrapped_##i(void)           \
    {                                                                 \
        keep[kept++] = strdup("a string from strdup number " #i);     \
    }
#define DEFINE_TENS(t)                  \
    WRAPPED(t##0) WRAPPED(t##1) WRAPPED(t##2) WRAPPED(t##3) WRAPPED(t##4) \
    WRAPPED(t##5) WRAPPED(t##6) WRAPPED(t##7) WRAPPED(t##8) WRAPPED(t##9)
DEFINE_TENS(1) DEFINE_TENS(2) DEFINE_TENS(3) DEFINE_TENS(4) DEFINE_TENS(5)
DEFINE_TENS(6) DEFINE_TENS(7) DEFINE_TENS(8) DEFINE_TENS(9) DEFINE_TENS(10)
DEFINE_TENS(11) DEFINE_TENS(12) DEFINE_TENS(13) DEFINE_TENS(14) DEFINE_TENS(15)
DEFINE_TENS(16) DEFINE_TENS(17) DEFINE_TENS(18) DEFINE_TENS(19) DEFINE_TENS(20)

#define CALL(i) at_site(), at_site(), wrapped_##i(), at_site();
#define CALL_TENS(t) CALL(t##0) CALL(t##1) CALL(t##2) CALL(t##3) CALL(t##4) \
                     CALL(t##5) CALL(t##6) CALL(t##7) CALL(t##8) CALL(t##9)

int main(void)
{
    CALL_TENS(1) CALL_TENS(2) CALL_TENS(3) CALL_TENS(4) CALL_TENS(5)
    CALL_TENS(6) CALL_TENS(7) CALL_TENS(8) CALL_TENS(9) CALL_TENS(10)
    CALL_TENS(11) CALL_TENS(12) CALL_TENS(13) CALL_TENS(14) CALL_TENS(15)
    CALL_TENS(16) CALL_TENS(17) CALL_TENS(18) CALL_TENS(19) CALL_TENS(20)
    return 0;
}
