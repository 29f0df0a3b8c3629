// Which request's next unit of work runs: the scheduler's rule, as pure functions of the
// waiting requests and the time, so tests drive it with a fake clock.
//
// The rule. Every request has a base level (low 0, normal 1, high 2, realtime 3). While a
// request is ready and waiting, its level rises by one for every `aging_ms` it has waited since
// it last ran a unit (or became ready), up to high; one more period puts it above every high
// request but below realtime (which is only ever asked for, never reached by waiting). The next
// unit goes to the highest effective level; among equals, to the earliest deadline, then to the
// longest wait, then to the earliest submitted (above high by waiting: the longest wait first). Running a unit resets
// the wait, so an aged request falls back to its own level after each unit it gets.
//
// The bounds that follow. A ready request below realtime gets a unit within
// (high - base + 1) * aging_ms plus one unit per other request above it at that point: nothing
// starves while realtime work leaves time. A realtime request waits at most for the unit running
// when it arrived plus the realtime requests before it; a high one, additionally, one unit of
// each request that has aged past it. `nfuse stress` prints each model's longest unit.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace nfuse::runtime {

enum class Priority { kLow = 0, kNormal = 1, kHigh = 2, kRealtime = 3 };

const char* priority_name(Priority priority);
std::optional<Priority> parse_priority(const std::string& name);

struct SchedulingOptions {
  // Waiting this long raises a request one level (default: 25 ms, below one 30 Hz period).
  double aging_ms = 25.0;
};

struct Candidate {
  uint64_t id = 0;  // submission order
  Priority priority = Priority::kNormal;
  double waiting_since_ms = 0.0;  // became ready, or last ran a unit
  double deadline_ms = std::numeric_limits<double>::infinity();
};

// What `c` competes with at `now_ms`, in half levels: 2 x (base + whole aging periods waited),
// at most 2 x high + 1 (above high, below realtime); realtime is 2 x 3.
int effective_level(const Candidate& c, double now_ms, const SchedulingOptions& options);

// Index into `ready` of the request whose unit runs next; ready must not be empty.
size_t pick_next(const std::vector<Candidate>& ready, double now_ms, const SchedulingOptions& options);

}  // namespace nfuse::runtime
