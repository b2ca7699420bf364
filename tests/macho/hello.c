/* A Mach-O program for macho.test, built by clang-14 -target
 * x86_64-apple-macos11 (and arm64) and ld64.lld-14 against the small
 * libSystem.tbd beside it and libgreet.dylib (greet.c): no SDK on this
 * machine, so the functions it imports are declared here. It is never
 * run: memprof reads it, and llvm-nm-14 and llvm-objdump-14 give the
 * reference answers. */
typedef unsigned long size_t;
void *malloc(size_t);
void *calloc(size_t, size_t);
void free(void *);
int printf(const char *, ...);
char *strcpy(char *, const char *);
const char *greet(const char *);
extern int greet_count;

static int made;
int exported_value = 3;
int (*print_through)(const char *, ...) = printf;   /* a data pointer dyld binds */

static void count_one(void)
{
    made++;
}

void *make(size_t n)
{
    count_one();
    return n > 64 ? calloc(1, n) : malloc(n);
}

int main(int argc, char **argv)
{
    char *p = make(32);
    strcpy(p, argv[argc - 1]);
    print_through("%s %s %d %d\n", greet(p), p, made, greet_count);
    free(p);
    return 0;
}
