#include <gtest/gtest.h>

#include <random>

#include "compile/memory_planner.h"

namespace nfuse::compile {
namespace {

// No two buffers alive at the same step may overlap in memory; all fit in the arena.
void expect_valid(const std::vector<BufferRequest>& reqs, const MemoryPlan& plan) {
  ASSERT_EQ(plan.offsets.size(), reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(plan.offsets[i] % 64, 0u);
    EXPECT_LE(plan.offsets[i] + reqs[i].bytes, plan.arena_bytes);
    for (size_t j = i + 1; j < reqs.size(); ++j) {
      const bool time_overlap = reqs[i].first_step <= reqs[j].last_step && reqs[j].first_step <= reqs[i].last_step;
      const bool mem_overlap = plan.offsets[i] < plan.offsets[j] + reqs[j].bytes &&
                               plan.offsets[j] < plan.offsets[i] + reqs[i].bytes;
      EXPECT_FALSE(time_overlap && mem_overlap) << "buffers " << i << " and " << j;
    }
  }
}

TEST(MemoryPlanner, ChainReusesMemory) {
  // a -> b -> c -> d: each tensor lives for two steps, so two buffers suffice.
  std::vector<BufferRequest> reqs = {{1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}, {1000, 3, 4}};
  MemoryPlan plan = plan_memory(reqs);
  expect_valid(reqs, plan);
  EXPECT_EQ(plan.arena_bytes, 2 * 1024u);
  EXPECT_EQ(plan.naive_bytes, 4 * 1024u);
}

TEST(MemoryPlanner, EverythingAliveNeedsTheSum) {
  std::vector<BufferRequest> reqs = {{100, 0, 5}, {200, 0, 5}, {300, 0, 5}};
  MemoryPlan plan = plan_memory(reqs);
  expect_valid(reqs, plan);
  EXPECT_EQ(plan.arena_bytes, 128u + 256u + 320u);
}

TEST(MemoryPlanner, RandomGraphsNeverOverlap) {
  const unsigned seed = 1234;
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<BufferRequest> reqs;
    const int n = 1 + static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      const int first = static_cast<int>(rng() % 30);
      reqs.push_back({1 + rng() % 5000, first, first + static_cast<int>(rng() % 10)});
    }
    MemoryPlan plan = plan_memory(reqs);
    SCOPED_TRACE("seed " + std::to_string(seed) + " trial " + std::to_string(trial));
    expect_valid(reqs, plan);
    EXPECT_LE(plan.arena_bytes, plan.naive_bytes);
  }
}

// A stored layout is taken only when it is one: plan_memory's own answers pass (and give the
// same arena), and any offset moved onto a buffer live at the same step, misaligned, out of
// range, or a count that does not match is refused.
TEST(MemoryPlanner, CheckAcceptsPlansAndRefusesCollisions) {
  std::mt19937 rng(23);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<BufferRequest> requests;
    const int n = 1 + static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      const int first = static_cast<int>(rng() % 30);
      requests.push_back({rng() % 5000, first, first + static_cast<int>(rng() % 8)});
    }
    const MemoryPlan plan = plan_memory(requests);
    auto checked = check_memory_plan(requests, plan.offsets);
    ASSERT_TRUE(checked.has_value()) << "trial " << trial;
    EXPECT_EQ(checked->arena_bytes, plan.arena_bytes);
    EXPECT_EQ(checked->offsets, plan.offsets);
    // Every request moved onto every other one live at the same step is refused.
    for (size_t a = 0; a < requests.size(); ++a) {
      for (size_t b = 0; b < requests.size(); ++b) {
        if (a == b || requests[a].first_step > requests[b].last_step || requests[b].first_step > requests[a].last_step)
          continue;
        std::vector<size_t> moved = plan.offsets;
        moved[a] = moved[b];
        EXPECT_FALSE(check_memory_plan(requests, moved).has_value()) << trial << ": " << a << " on " << b;
      }
    }
    std::vector<size_t> bad = plan.offsets;
    bad[0] += 8;
    EXPECT_FALSE(check_memory_plan(requests, bad).has_value());
    bad[0] = SIZE_MAX - 63;
    EXPECT_FALSE(check_memory_plan(requests, bad).has_value());
    bad = plan.offsets;
    bad.push_back(0);
    EXPECT_FALSE(check_memory_plan(requests, bad).has_value());
  }
}

}  // namespace
}  // namespace nfuse::compile
