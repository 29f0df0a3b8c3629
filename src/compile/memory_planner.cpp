#include "compile/memory_planner.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <set>
#include <utility>

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

std::optional<MemoryPlan> check_memory_plan(const std::vector<BufferRequest>& requests,
                                            const std::vector<size_t>& offsets, size_t alignment) {
  if (offsets.size() != requests.size() || alignment == 0) return std::nullopt;
  MemoryPlan plan;
  std::vector<size_t> ends(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const size_t size = align_up(std::max<size_t>(requests[i].bytes, 1), alignment);
    if (offsets[i] % alignment != 0 || offsets[i] > std::numeric_limits<size_t>::max() / 2 - size) return std::nullopt;
    ends[i] = offsets[i] + size;
    plan.naive_bytes += size;
    plan.arena_bytes = std::max(plan.arena_bytes, ends[i]);
  }
  // A sweep over the steps: the buffers live at the current step, disjoint by construction and
  // ordered by offset, so a new one overlaps some live buffer exactly when it overlaps one of
  // its two neighbours in that order.
  std::vector<size_t> by_first(requests.size()), by_last(requests.size());
  std::iota(by_first.begin(), by_first.end(), 0);
  std::iota(by_last.begin(), by_last.end(), 0);
  std::sort(by_first.begin(), by_first.end(),
            [&](size_t a, size_t b) { return requests[a].first_step < requests[b].first_step; });
  std::sort(by_last.begin(), by_last.end(),
            [&](size_t a, size_t b) { return requests[a].last_step < requests[b].last_step; });
  std::set<std::pair<size_t, size_t>> live;  // (offset, end)
  size_t next_dead = 0;
  for (size_t i : by_first) {
    const int step = requests[i].first_step;
    for (; next_dead < by_last.size() && requests[by_last[next_dead]].last_step < step; ++next_dead) {
      const size_t d = by_last[next_dead];
      if (requests[d].first_step <= requests[d].last_step) live.erase({offsets[d], ends[d]});
    }
    if (requests[i].first_step > requests[i].last_step) continue;  // never live
    auto after = live.lower_bound({offsets[i], 0});
    if (after != live.end() && after->first < ends[i]) return std::nullopt;
    if (after != live.begin() && std::prev(after)->second > offsets[i]) return std::nullopt;
    live.insert({offsets[i], ends[i]});
  }
  plan.offsets = offsets;
  return plan;
}

}  // namespace nfuse::compile
