/* Not Ruby: keeps one heap block, then stops itself with SIGTRAP so GDB can
 * try memprof commands here. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

void *volatile kept;

int main(void)
{
    kept = malloc(4096);   /* TRAP:kept */
    raise(SIGTRAP);
    puts("trap_program: done");
    return 0;
}
