#include "runtime/scheduling_policy.h"

#include <algorithm>
#include <cmath>

namespace nfuse::runtime {

const char* priority_name(Priority priority) {
  switch (priority) {
    case Priority::kLow: return "low";
    case Priority::kNormal: return "normal";
    case Priority::kHigh: return "high";
    case Priority::kRealtime: return "realtime";
  }
  return "unknown";
}

std::optional<Priority> parse_priority(const std::string& name) {
  for (Priority p : {Priority::kLow, Priority::kNormal, Priority::kHigh, Priority::kRealtime})
    if (name == priority_name(p)) return p;
  return std::nullopt;
}

int effective_level(const Candidate& c, double now_ms, const SchedulingOptions& options) {
  const int base = 2 * static_cast<int>(c.priority);
  const int ceiling = 2 * static_cast<int>(Priority::kHigh) + 1;
  if (c.priority == Priority::kRealtime) return base;
  const double waited = std::max(0.0, now_ms - c.waiting_since_ms);
  const double periods = options.aging_ms > 0 ? std::floor(waited / options.aging_ms) : 0.0;
  return static_cast<int>(std::min<double>(ceiling, base + 2.0 * periods));
}

size_t pick_next(const std::vector<Candidate>& ready, double now_ms, const SchedulingOptions& options) {
  size_t best = 0;
  int best_level = effective_level(ready[0], now_ms, options);
  for (size_t i = 1; i < ready.size(); ++i) {
    const Candidate& c = ready[i];
    const Candidate& b = ready[best];
    const int level = effective_level(c, now_ms, options);
    bool better = level > best_level;
    if (level == best_level) {
      // Past high by waiting: the longest wait first, or a flood with deadlines could starve it.
      const bool starving = level == 2 * static_cast<int>(Priority::kHigh) + 1;
      if (!starving && c.deadline_ms != b.deadline_ms)
        better = c.deadline_ms < b.deadline_ms;
      else if (c.waiting_since_ms != b.waiting_since_ms)
        better = c.waiting_since_ms < b.waiting_since_ms;
      else
        better = c.id < b.id;
    }
    if (better) {
      best = i;
      best_level = level;
    }
  }
  return best;
}

}  // namespace nfuse::runtime
