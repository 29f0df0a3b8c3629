// Status checks for the C API tests: take a status (its code and message, then release it) and
// expect a code, with the message shown on failure.
#pragma once

#include <nfuse/nfuse.h>

#include <gtest/gtest.h>

#include <string>

namespace nfuse_test {

struct Checked {
  nfuse_status_code code;
  std::string message;
};

inline Checked take(nfuse_status* s) {
  Checked c{nfuse_status_get_code(s), nfuse_status_get_message(s)};
  nfuse_status_release(s);
  return c;
}

}  // namespace nfuse_test

#define EXPECT_NFUSE_OK(call)                            \
  do {                                                   \
    ::nfuse_test::Checked c_ = ::nfuse_test::take(call); \
    EXPECT_EQ(c_.code, NFUSE_OK) << c_.message;          \
  } while (0)
#define ASSERT_NFUSE_OK(call)                            \
  do {                                                   \
    ::nfuse_test::Checked c_ = ::nfuse_test::take(call); \
    ASSERT_EQ(c_.code, NFUSE_OK) << c_.message;          \
  } while (0)
#define EXPECT_NFUSE_CODE(call, want, substring)                                           \
  do {                                                                                     \
    ::nfuse_test::Checked c_ = ::nfuse_test::take(call);                                   \
    EXPECT_EQ(c_.code, want) << c_.message;                                                \
    EXPECT_NE(c_.message.find(substring), std::string::npos) << "message: " << c_.message; \
  } while (0)
