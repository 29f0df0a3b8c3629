// SideThread: the job runs beside the caller (on the caller's CPUs less the one it started
// from), once, and join() waits for it; a caller held to one CPU starts nothing.
#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "core/side_thread.h"

namespace nfuse {
namespace {

TEST(SideThread, RunsTheJobOnTheCallersOtherCpusAndJoinWaitsForIt) {
  cpu_set_t mine;
  ASSERT_EQ(sched_getaffinity(0, sizeof(mine), &mine), 0);
  if (CPU_COUNT(&mine) < 2) {
    SideThread side;
    EXPECT_FALSE(side.start([] {})) << "one CPU: nothing may start";
    return;
  }
  for (int round = 0; round < 20; ++round) {
    SideThread side;
    std::atomic<int> runs{0};
    cpu_set_t job_mask;
    CPU_ZERO(&job_mask);
    int job_cpu = -1;
    ASSERT_TRUE(side.start([&] {
      job_cpu = sched_getcpu();
      (void)sched_getaffinity(0, sizeof(job_mask), &job_mask);
      runs.fetch_add(1);
    }));
    side.join();
    EXPECT_EQ(runs.load(), 1);
    // One CPU fewer than the caller's, all of them the caller's, and the job ran on one of them.
    cpu_set_t outside;
    CPU_AND(&outside, &job_mask, &mine);
    EXPECT_EQ(CPU_COUNT(&outside), CPU_COUNT(&job_mask));
    EXPECT_EQ(CPU_COUNT(&job_mask), CPU_COUNT(&mine) - 1);
    ASSERT_GE(job_cpu, 0);
    EXPECT_TRUE(CPU_ISSET(job_cpu, &job_mask));
    side.join();  // a second join returns at once
  }
}

TEST(SideThread, ACallerHeldToOneCpuStartsNothing) {
  cpu_set_t mine, one;
  ASSERT_EQ(sched_getaffinity(0, sizeof(mine), &mine), 0);
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu(), &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  SideThread side;
  bool ran = false;
  const bool started = side.start([&] { ran = true; });
  ASSERT_EQ(sched_setaffinity(0, sizeof(mine), &mine), 0);
  EXPECT_FALSE(started);
  side.join();
  EXPECT_FALSE(ran);
}

TEST(SideThread, DestroyingItJoinsTheJob) {
  std::atomic<bool> done{false};
  {
    SideThread side;
    if (!side.start([&] {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
          done.store(true);
        }))
      done.store(true);  // one CPU: nothing started, nothing to wait for
  }
  EXPECT_TRUE(done.load());
}

}  // namespace
}  // namespace nfuse
