/* Compiled with -std=c99 -Wall -Wextra -Werror -pedantic: nfuse.h is plain C99. */
#include <nfuse/nfuse.h>

int nfuse_header_c99_check(void);
int nfuse_header_c99_check(void) { return NFUSE_API_VERSION > 0 && sizeof(nfuse_dtype) > 0; }
