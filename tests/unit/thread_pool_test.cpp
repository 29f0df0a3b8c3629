#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "core/thread_pool.h"

namespace nfuse {
namespace {

// Runs `count` tasks and checks: each exactly once, worker indices in range, and never two tasks
// at once on one worker index (what per-worker scratch relies on).
void check_section(ThreadPool& pool, size_t count) {
  std::vector<std::atomic<int>> runs(count);
  std::vector<std::atomic<int>> busy(pool.threads());
  std::atomic<int> violations{0};
  pool.run(count, [&](size_t task, size_t worker) {
    if (worker >= pool.threads()) {
      ++violations;
      return;
    }
    if (busy[worker].fetch_add(1) != 0) ++violations;
    runs[task].fetch_add(1);
    volatile int spin = 0;
    for (int i = 0; i < static_cast<int>(task % 7) * 50; ++i) spin = spin + i;
    busy[worker].fetch_sub(1);
  });
  EXPECT_EQ(violations.load(), 0);
  for (size_t t = 0; t < count; ++t) ASSERT_EQ(runs[t].load(), 1) << "task " << t << " of " << count;
}

TEST(ThreadPool, EveryTaskOnceOnAValidExclusiveWorker) {
  std::mt19937 rng(3);
  for (int threads : {1, 2, 3, 4}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.threads(), static_cast<size_t>(threads));
    for (int section = 0; section < 300; ++section) check_section(pool, rng() % 40);
  }
}

// Modes change between sections: fewer active workers, no spinning (workers sleep after every
// section and are woken by the next), parked workers; results stay exact.
TEST(ThreadPool, ModesKeepResultsExact) {
  ThreadPool pool(3);
  for (double spin : {0.0, 50.0, 2000.0}) {
    pool.set_spin_us(spin);
    for (size_t active : {1, 2, 3}) {
      pool.set_active_workers(active);
      for (int i = 0; i < 50; ++i) {
        check_section(pool, 17);
        if (i % 10 == 0) pool.park();
      }
    }
  }
  pool.set_active_workers(1);
  std::atomic<int> off_caller{0};
  pool.run(64, [&](size_t, size_t worker) { off_caller += worker != 0; });
  EXPECT_EQ(off_caller.load(), 0);  // one active worker: the caller alone
}

// Two threads share one pool (two sessions of one runtime): their sections take turns.
TEST(ThreadPool, ConcurrentCallersTakeTurns) {
  ThreadPool pool(2);
  std::vector<std::thread> callers;
  for (int c = 0; c < 2; ++c)
    callers.emplace_back([&] {
      for (int i = 0; i < 200; ++i) check_section(pool, 9);
    });
  for (auto& t : callers) t.join();
}

TEST(ThreadPool, RecordsWorkerSpansWhileProfiling) {
  ThreadPool pool(2);
  WorkerSpanRecorder recorder;
  int tag = 0;
  recorder.tag = &tag;
  WorkerSpanRecorder* outer = set_worker_span_recorder(&recorder);
  pool.run(8, [](size_t, size_t) { std::this_thread::sleep_for(std::chrono::microseconds(200)); });
  set_worker_span_recorder(outer);
  ASSERT_FALSE(recorder.spans.empty());
  for (const WorkerSpan& s : recorder.spans) {
    EXPECT_LT(s.worker, 2u);
    EXPECT_LE(s.start_us, s.end_us);
    EXPECT_EQ(s.tag, &tag);
  }
}

}  // namespace
}  // namespace nfuse
