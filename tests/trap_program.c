/* Not Ruby: stops itself with SIGTRAP so GDB can try memprof commands here. */
#include <signal.h>
#include <stdio.h>

int main(void)
{
    raise(SIGTRAP);
    puts("trap_program: done");
    return 0;
}
