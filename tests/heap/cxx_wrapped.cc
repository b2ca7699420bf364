// Allocations made through library code (tests/heap-cxx.test): containers,
// strings and strdup, each charged to the user's line marked WRAPPED:, not
// to operator new, std:: code, a system header or strdup.
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>
struct Node { long v[4]; Node *next; };
struct Kept {
    std::vector<Node *> nodes;
    std::map<int, std::string> names;
    std::vector<int> numbers;
    std::string text;
    char *copy;
};
Kept *make_nodes(int n)
{
    Kept *kept = new Kept;                                // WRAPPED:kept
    for (int i = 0; i < n; i++)
        kept->nodes.push_back(new Node());                // WRAPPED:push
    kept->names[1] = "x";                                 // WRAPPED:map
    kept->numbers.resize(1000);                           // WRAPPED:resize
    kept->text.assign(300, 'y');                          // WRAPPED:string
    kept->copy = strdup("a copy long enough to be seen"); // WRAPPED:strdup
    return kept;
}
static inline char *make_entry(int n)
{
    char *entry = new char[n];                            // WRAPPED:inline
    std::memset(entry, 'e', n);
    return entry;
}
int main(int argc, char **)
{
    Kept *kept = make_nodes(100);
    char *entry = make_entry(argc * 77);
    std::printf("%zu %c\n", kept->nodes.size(), entry[0]);
    return 0;
}
