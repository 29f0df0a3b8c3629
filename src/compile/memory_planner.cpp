#include "compile/memory_planner.h"

#include <algorithm>
#include <numeric>

namespace nfuse::compile {

static size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

MemoryPlan plan_memory(const std::vector<BufferRequest>& requests, size_t alignment) {
  MemoryPlan plan;
  plan.offsets.assign(requests.size(), 0);
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return requests[a].bytes > requests[b].bytes; });

  struct Placed {
    size_t offset, end;
    int first, last;
  };
  std::vector<Placed> placed;
  placed.reserve(requests.size());
  std::vector<const Placed*> live;
  for (size_t idx : order) {
    const BufferRequest& r = requests[idx];
    const size_t size = align_up(std::max<size_t>(r.bytes, 1), alignment);
    plan.naive_bytes += size;
    // Placed buffers overlapping in time, by offset; take the first gap that fits.
    live.clear();
    for (const Placed& p : placed)
      if (p.first <= r.last_step && r.first_step <= p.last) live.push_back(&p);
    std::sort(live.begin(), live.end(), [](const Placed* a, const Placed* b) { return a->offset < b->offset; });
    size_t offset = 0;
    for (const Placed* p : live) {
      if (p->offset >= offset + size) break;
      offset = std::max(offset, p->end);
    }
    plan.offsets[idx] = offset;
    placed.push_back({offset, offset + size, r.first_step, r.last_step});
    plan.arena_bytes = std::max(plan.arena_bytes, offset + size);
  }
  return plan;
}

}  // namespace nfuse::compile
