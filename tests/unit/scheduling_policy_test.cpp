#include <gtest/gtest.h>

#include <vector>

#include "runtime/scheduling_policy.h"

namespace nfuse::runtime {
namespace {

SchedulingOptions aging(double ms) {
  SchedulingOptions o;
  o.aging_ms = ms;
  return o;
}

TEST(SchedulingPolicy, AgingRaisesOneLevelPerPeriodUpToJustAboveHigh) {
  const SchedulingOptions o = aging(10);
  Candidate low{1, Priority::kLow, 0.0};
  EXPECT_EQ(effective_level(low, 0.0, o), 0);
  EXPECT_EQ(effective_level(low, 9.9, o), 0);
  EXPECT_EQ(effective_level(low, 10.0, o), 2);   // normal
  EXPECT_EQ(effective_level(low, 20.0, o), 4);   // high
  EXPECT_EQ(effective_level(low, 30.0, o), 5);   // above high
  EXPECT_EQ(effective_level(low, 900.0, o), 5);  // never realtime
  Candidate realtime{2, Priority::kRealtime, 0.0};
  EXPECT_EQ(effective_level(realtime, 900.0, o), 6);
  Candidate high{3, Priority::kHigh, 0.0};
  EXPECT_EQ(effective_level(high, 9.0, o), 4);
  EXPECT_EQ(effective_level(high, 10.0, o), 5);
}

TEST(SchedulingPolicy, PicksLevelThenDeadlineThenLongestWaitThenSubmission) {
  const SchedulingOptions o = aging(100);
  std::vector<Candidate> ready = {{1, Priority::kNormal, 0.0}, {2, Priority::kHigh, 5.0}, {3, Priority::kLow, 0.0}};
  EXPECT_EQ(pick_next(ready, 5.0, o), 1u);
  // Equal levels: the earlier deadline, then the longer wait, then the earlier submission.
  ready = {{1, Priority::kHigh, 0.0, 50.0}, {2, Priority::kHigh, 0.0, 20.0}};
  EXPECT_EQ(pick_next(ready, 1.0, o), 1u);
  ready = {{1, Priority::kHigh, 3.0}, {2, Priority::kHigh, 1.0}};
  EXPECT_EQ(pick_next(ready, 4.0, o), 1u);
  ready = {{7, Priority::kHigh, 1.0}, {4, Priority::kHigh, 1.0}};
  EXPECT_EQ(pick_next(ready, 4.0, o), 1u);
  // A realtime request beats every aged one.
  ready = {{1, Priority::kLow, 0.0}, {2, Priority::kRealtime, 999.0}};
  EXPECT_EQ(pick_next(ready, 1000.0, o), 1u);
}

// The aging bound, on a fake clock: high-priority requests with deadlines arrive faster than
// they can be served (every unit 4 ms, a new one always ready), and a low request still gets a
// unit within (high - low + 1) x aging + one unit, every time, until it has run all of its own.
TEST(SchedulingPolicy, AFloodOfHighRequestsDoesNotStarveALowOne) {
  const SchedulingOptions o = aging(10);
  const double unit_ms = 4.0;
  double now = 0.0;
  Candidate low{1, Priority::kLow, 0.0};
  std::vector<Candidate> highs;
  uint64_t next_id = 2;
  int low_units = 0;
  double longest_gap = 0.0;
  double last_low = 0.0;
  while (low_units < 20 && now < 10000.0) {
    while (highs.size() < 3) highs.push_back({next_id++, Priority::kHigh, now, now + 33.0});
    std::vector<Candidate> ready = highs;
    ready.push_back(low);
    const size_t pick = pick_next(ready, now, o);
    now += unit_ms;
    if (pick == ready.size() - 1) {
      longest_gap = std::max(longest_gap, now - unit_ms - last_low);
      last_low = now;
      low.waiting_since_ms = now;
      ++low_units;
    } else {
      highs.erase(highs.begin() + static_cast<long>(pick));  // a one-unit high request, done
    }
  }
  EXPECT_EQ(low_units, 20);
  EXPECT_LE(longest_gap, 3 * o.aging_ms + unit_ms);
  EXPECT_GT(longest_gap, 2 * o.aging_ms);  // and it did have to wait: the highs went first
}

TEST(SchedulingPolicy, NamesRoundTrip) {
  for (Priority p : {Priority::kLow, Priority::kNormal, Priority::kHigh, Priority::kRealtime})
    EXPECT_EQ(parse_priority(priority_name(p)), p);
  EXPECT_FALSE(parse_priority("urgent").has_value());
}

}  // namespace
}  // namespace nfuse::runtime
