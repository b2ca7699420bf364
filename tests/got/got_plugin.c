/* Loaded with dlopen after hooking: its GOT must be patched on arrival. */
extern int target_add(int a, int b);

int plugin_call(int a, int b)
{
    return target_add(a, b);
}
