/* libgreet.dylib for macho.test: a library of its own, so the program
 * imports from two dylibs (two-level namespace ordinals 1 and 2), and a
 * dylib has imports of its own. */
typedef unsigned long size_t;
void *malloc(size_t);
int snprintf(char *, size_t, const char *, ...);

int greet_count;
static char buffer[64];

static const char *prefix(void)
{
    return "hello, ";
}

const char *greet(const char *name)
{
    greet_count++;
    snprintf(buffer, sizeof buffer, "%s%s", prefix(), name);
    return buffer;
}

void *greet_alloc(size_t n)
{
    return malloc(n);
}
