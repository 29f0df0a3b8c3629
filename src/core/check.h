// NFUSE_DCHECK: a precondition that prepare established and run time trusts
// (docs/error_handling.md). Checked in debug builds, or wherever NFUSE_DCHECKS is defined;
// compiled out otherwise, its condition then not evaluated. Never for anything a model, an
// input or an API caller controls: those get a Status.
#pragma once

#include <cstdio>
#include <cstdlib>

#if !defined(NDEBUG) || defined(NFUSE_DCHECKS)
#define NFUSE_DCHECK(condition, message)                                                                     \
  do {                                                                                                       \
    if (!(condition)) {                                                                                      \
      std::fprintf(stderr, "%s:%d: NFUSE_DCHECK(%s) failed: %s\n", __FILE__, __LINE__, #condition, message); \
      std::abort();                                                                                          \
    }                                                                                                        \
  } while (false)
#else
#define NFUSE_DCHECK(condition, message) \
  do {                                   \
    if (false) {                         \
      (void)(condition);                 \
      (void)(message);                   \
    }                                    \
  } while (false)
#endif
