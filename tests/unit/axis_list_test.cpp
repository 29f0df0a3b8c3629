// ops::AxisList against std::vector: the same contents through every operation, inline and
// spilled to the heap (a 5-D window's pads are 10 entries) and back.
#include "ops/axis_list.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace nfuse::ops {
namespace {

void expect_same(const AxisList& a, const std::vector<int64_t>& v) {
  ASSERT_EQ(a.size(), v.size());
  EXPECT_EQ(a.empty(), v.empty());
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(a[i], v[i]) << i;
  EXPECT_EQ(a.vector(), v);
  EXPECT_EQ(std::vector<int64_t>(a.begin(), a.end()), v);
}

TEST(AxisList, EveryOperationMatchesAVectorInlineAndSpilled) {
  AxisList a;
  std::vector<int64_t> v;
  expect_same(a, v);
  for (int64_t i = 0; i < 20; ++i) {  // crosses the inline capacity
    a.push_back(i * 7 - 3);
    v.push_back(i * 7 - 3);
    expect_same(a, v);
  }
  a.resize(5);  // back inline, contents kept
  v.resize(5);
  expect_same(a, v);
  a.resize(11);  // spilled again: new entries are zero
  v.resize(11);
  expect_same(a, v);
  a.assign(3, 9);
  v.assign(3, 9);
  expect_same(a, v);
  const std::vector<int64_t> long_list(AxisList::kInline + 2, 4);
  AxisList b(long_list);
  expect_same(b, long_list);
  AxisList copy = b;  // a copy owns its own heap list
  copy[0] = 1;
  EXPECT_EQ(b[0], 4);
  EXPECT_NE(copy, b);
  copy[0] = 4;
  EXPECT_EQ(copy, b);
  AxisList moved = std::move(copy);
  EXPECT_EQ(moved, b);
  EXPECT_TRUE(copy.empty());  // NOLINT(bugprone-use-after-move): the documented moved-from state
  copy = moved;
  EXPECT_EQ(copy, b);
  EXPECT_EQ(AxisList({1, 2, 3}), AxisList(std::vector<int64_t>{1, 2, 3}));
  EXPECT_NE(AxisList({1, 2, 3}), AxisList({1, 2}));
  EXPECT_EQ(AxisList({1, 2, 3}).back(), 3);
  EXPECT_EQ(AxisList(2, 5), AxisList({5, 5}));
}

}  // namespace
}  // namespace nfuse::ops
