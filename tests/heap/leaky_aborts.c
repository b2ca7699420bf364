/* examples/leaky.c (built with -Dmain=leaky_main) ending in abort(): its
 * heap as at its exit, in a core. */
#include <stdlib.h>

int leaky_main(int argc, char **argv);

int main(int argc, char **argv)
{
    leaky_main(argc, argv);
    abort();
}
