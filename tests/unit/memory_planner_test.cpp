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

}  // namespace
}  // namespace nfuse::compile
