// Every kind of operator new at known lines (tests/heap-cxx.test): each
// NEW: comment marks the line the report must charge.
#include <cstdio>
#include <new>
#include <string>
#include <vector>
struct Node { long value; Node *next; char pad[24]; };
struct alignas(64) Wide { char bytes[100]; };
Node *keep_nodes(int n)
{
    Node *head = nullptr;
    for (int i = 0; i < n; i++) {
        Node *node = new Node;            // NEW:node
        node->next = head;
        head = node;
    }
    return head;
}
int main()
{
    Node *nodes = keep_nodes(400);
    int *ints = new int[250];             // NEW:array
    Node *maybe = new (std::nothrow) Node; // NEW:nothrow
    Wide *wide = new Wide;                // NEW:aligned
    Wide *walls = new Wide[3];            // NEW:aligned-array
    Node *gone = new Node;                // NEW:deleted
    delete gone;
    int *gone_array = new int[10];
    delete[] gone_array;
    std::printf("%p %p %p %p %p\n", (void *)nodes, (void *)ints, (void *)maybe, (void *)wide, (void *)walls);
    return 0;
}
