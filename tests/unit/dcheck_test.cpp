// NFUSE_DCHECK: aborts naming the condition where checks are on; compiled out (its condition
// not evaluated) where they are off.
#define NFUSE_DCHECKS 1
#include "core/check.h"

#include <gtest/gtest.h>

namespace {

TEST(Dcheck, PassingConditionDoesNothing) {
  int evaluated = 0;
  NFUSE_DCHECK(++evaluated == 1, "evaluated once");
  EXPECT_EQ(evaluated, 1);
}

TEST(DcheckDeathTest, FailingConditionAbortsNamingIt) {
  EXPECT_DEATH(NFUSE_DCHECK(1 + 1 == 3, "arithmetic"), "NFUSE_DCHECK\\(1 \\+ 1 == 3\\) failed: arithmetic");
}

}  // namespace
