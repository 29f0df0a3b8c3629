// The main of every gtest binary that links the internals: the built-in ops, kernels and
// backends are registered explicitly (runtime/builtins.h) before any test runs.
#include <gtest/gtest.h>

#include "runtime/builtins.h"

int main(int argc, char** argv) {
  nfuse::register_builtins();
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
