#include <cstdio>
int main() { std::puts("nfuse"); return 0; }
