// Compiled as C++17 with -Wall -Wextra -Werror -pedantic: nfuse.hpp needs nothing newer.
#include <nfuse/nfuse.hpp>

int nfuse_header_cpp17_check();
int nfuse_header_cpp17_check() { return nfuse::Status().ok() ? 1 : 0; }
