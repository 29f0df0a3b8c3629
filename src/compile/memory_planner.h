// Arena memory planning: every intermediate tensor gets an offset in one arena, chosen from
// liveness so that tensors alive at the same time never overlap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace nfuse::compile {

struct BufferRequest {
  size_t bytes = 0;
  int first_step = 0;  // step that writes it
  int last_step = 0;   // last step that reads it (inclusive)
};

struct MemoryPlan {
  std::vector<size_t> offsets;  // one per request, aligned to `alignment`
  size_t arena_bytes = 0;       // peak: the arena size needed
  size_t naive_bytes = 0;       // sum of all requests, for comparison
};

// Greedy by size (largest first, each at the lowest offset that does not collide in time with
// a buffer already placed): simple, deterministic and near-optimal on DNN graphs.
MemoryPlan plan_memory(const std::vector<BufferRequest>& requests, size_t alignment = 64);

// `offsets` as the plan of `requests` when they are one: one offset per request, each a multiple
// of `alignment`, and no two requests live at one step sharing a byte (their sizes rounded up as
// plan_memory rounds them). A layout read from a context binary is checked so before it is used;
// checking takes O(n log n) where planning takes O(n^2). nullopt when it is not a valid layout.
std::optional<MemoryPlan> check_memory_plan(const std::vector<BufferRequest>& requests,
                                            const std::vector<size_t>& offsets, size_t alignment = 64);

}  // namespace nfuse::compile
