/* The library whose function the GOT tests hook. */
int target_add(int a, int b)
{
    return a + b;
}
