#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "core/thread_pool.h"
#include "ir/graph.h"
#include "runtime/executor.h"

namespace nfuse::runtime {
namespace {

// `nodes` Neg nodes in a row on the cpu backend, unoptimized: one unit per node, and the output
// is x or -x by the parity of `nodes`.
std::unique_ptr<Session> neg_chain(const std::string& name, int nodes, std::shared_ptr<ThreadPool> workers) {
  auto g = std::make_unique<ir::Graph>();
  g->name = name;
  g->opsets[""] = 13;
  ir::TensorType t{ir::DType::kF32, ir::Shape::from_dims({4, 16})};
  ir::Value* prev = g->add_value("x", t).value();
  g->inputs().push_back(prev);
  for (int i = 0; i < nodes; ++i) {
    ir::Value* next = g->add_value("v" + std::to_string(i), t).value();
    g->add_node("Neg", "neg" + std::to_string(i), {prev}, {next});
    prev = next;
  }
  g->outputs().push_back(prev);
  EXPECT_TRUE(g->topo_sort().ok());
  SessionOptions o;
  o.backend = "cpu";
  o.optimize = false;
  o.threads = static_cast<int>(workers->threads());
  o.workers = std::move(workers);
  auto s = Session::create(std::move(g), o);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return s.ok() ? std::move(*s) : nullptr;
}

ir::Tensor filled(float base) {
  ir::Tensor x = ir::Tensor::allocate(ir::DType::kF32, {4, 16});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = base + static_cast<float>(i);
  return x;
}

void expect_signed_copy(const ir::Tensor& out, const ir::Tensor& in, float sign) {
  ASSERT_EQ(out.numel(), in.numel());
  for (int64_t i = 0; i < in.numel(); ++i) ASSERT_EQ(out.data<float>()[i], sign * in.data<float>()[i]) << i;
}

// A manual executor on a fake clock: the test decides when time passes and when work runs.
struct Manual {
  double now = 0.0;
  std::shared_ptr<ThreadPool> workers = std::make_shared<ThreadPool>(1);
  std::unique_ptr<Executor> executor;
  Manual() {
    Executor::Options o;
    o.manual = true;
    o.scheduling.aging_ms = 10.0;
    o.clock_ms = [this] { return now; };
    executor = std::make_unique<Executor>(workers, o);
    executor->set_tracing(true);
  }
  // Runs everything runnable, `step_ms` of fake time per piece; the request ids in run order.
  std::vector<uint64_t> drain(double step_ms = 1.0) {
    std::vector<uint64_t> order;
    while (executor->dispatch_one()) now += step_ms;
    const nlohmann::json trace = executor->trace_json("test");
    for (const nlohmann::json& e : trace["traceEvents"])
      if (e["ph"] == "X" && e["cat"] == "unit") order.push_back(e["args"]["request"].get<uint64_t>());
    return order;
  }
};

RequestOptions with_priority(Priority p) {
  RequestOptions o;
  o.priority = p;
  return o;
}

TEST(Executor, RunsTheHigherPriorityFirstAndSessionsInSubmissionOrder) {
  Manual m;
  auto a = neg_chain("a", 3, m.workers);
  auto b = neg_chain("b", 2, m.workers);
  ir::Tensor x = filled(1), y = filled(100);
  auto low = m.executor->submit(*a, nullptr, {{"x", x}}, with_priority(Priority::kLow));
  auto high = m.executor->submit(*b, nullptr, {{"x", y}}, with_priority(Priority::kHigh));
  auto low2 = m.executor->submit(*a, nullptr, {{"x", y}}, with_priority(Priority::kLow));
  ASSERT_TRUE(low.ok() && high.ok() && low2.ok());
  EXPECT_EQ(m.executor->queued(), 3u);
  const std::vector<uint64_t> order = m.drain(0.0);  // no time passes: no aging
  const uint64_t l = (*low)->id(), h = (*high)->id(), l2 = (*low2)->id();
  EXPECT_EQ(order, (std::vector<uint64_t>{h, h, l, l, l, l2, l2, l2}));
  ASSERT_TRUE((*low)->status().ok()) << (*low)->status().to_string();
  expect_signed_copy((*low)->outputs()[0], x, -1.0f);
  expect_signed_copy((*high)->outputs()[0], y, 1.0f);
  expect_signed_copy((*low2)->outputs()[0], y, -1.0f);
  EXPECT_EQ((*low)->times().units, 3u);
  EXPECT_EQ(m.executor->queued(), 0u);
}

// A high request submitted while a low one is half done runs before the low one's next unit:
// pre-emption at unit boundaries, and the low one's result is still right.
TEST(Executor, PreemptsBetweenUnits) {
  Manual m;
  auto a = neg_chain("a", 5, m.workers);
  auto b = neg_chain("b", 2, m.workers);
  ir::Tensor x = filled(1), y = filled(7);
  auto low = m.executor->submit(*a, nullptr, {{"x", x}}, with_priority(Priority::kLow));
  ASSERT_TRUE(m.executor->dispatch_one());
  ASSERT_TRUE(m.executor->dispatch_one());
  auto high = m.executor->submit(*b, nullptr, {{"x", y}}, with_priority(Priority::kHigh));
  const std::vector<uint64_t> order = m.drain(0.0);
  const uint64_t l = (*low)->id(), h = (*high)->id();
  EXPECT_EQ(order, (std::vector<uint64_t>{l, l, h, h, l, l, l}));
  expect_signed_copy((*low)->outputs()[0], x, -1.0f);
  expect_signed_copy((*high)->outputs()[0], y, 1.0f);
  EXPECT_DOUBLE_EQ((*high)->times().queue_wait_ms(), 0.0);
}

// On the fake clock (1 ms per unit, aging 10 ms): a stream of high requests always ready, and a
// low one that still finishes, each of its units within (high - low + 1) x aging + 1 unit.
TEST(Executor, AgingBoundsTheWaitOfALowRequest) {
  Manual m;
  auto a = neg_chain("a", 4, m.workers);
  std::vector<std::unique_ptr<Session>> highs;
  for (int i = 0; i < 2; ++i) highs.push_back(neg_chain("h" + std::to_string(i), 1, m.workers));
  ir::Tensor x = filled(3);
  auto low = m.executor->submit(*a, nullptr, {{"x", x}}, with_priority(Priority::kLow));
  std::vector<RequestPtr> high_requests;
  std::vector<double> low_unit_times;
  size_t low_units = 0;
  for (int step = 0; step < 400; ++step) {
    for (auto& s : highs)  // keep one high request queued per session
      if (m.executor->queued() < 3) {
        auto r = m.executor->submit(*s, nullptr, {{"x", x}}, with_priority(Priority::kHigh));
        ASSERT_TRUE(r.ok());
        high_requests.push_back(*r);
      }
    ASSERT_TRUE(m.executor->dispatch_one());
    m.now += 1.0;
    if ((*low)->times().units != low_units) {
      low_units = (*low)->times().units;
      low_unit_times.push_back(m.now);
    }
    if ((*low)->fence()->state() != Fence::State::kPending) break;
  }
  ASSERT_EQ((*low)->fence()->state(), Fence::State::kSignalled);
  expect_signed_copy((*low)->outputs()[0], x, 1.0f);
  double previous = 0.0;
  for (double t : low_unit_times) {
    EXPECT_LE(t - previous, 3 * 10.0 + 1.0 + 1.0);
    previous = t;
  }
  EXPECT_GT(low_unit_times.front(), 10.0);  // the highs did go first
}

TEST(Executor, DeadlinesAreReportedMissedOrDropped) {
  Manual m;
  auto a = neg_chain("a", 2, m.workers);
  ir::Tensor x = filled(0);
  RequestOptions drop = with_priority(Priority::kNormal);
  drop.deadline_ms = 5.0;
  drop.drop_if_late = true;
  RequestOptions keep = drop;
  keep.drop_if_late = false;
  auto dropped = m.executor->submit(*a, nullptr, {{"x", x}}, drop);
  auto late = m.executor->submit(*a, nullptr, {{"x", x}}, keep);
  m.now = 6.0;
  m.drain(1.0);
  EXPECT_EQ((*dropped)->status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE((*dropped)->status().message().find("deadline of 5"), std::string::npos) << (*dropped)->status().message();
  EXPECT_EQ((*dropped)->times().units, 0u);
  EXPECT_TRUE((*dropped)->times().missed_deadline);
  ASSERT_TRUE((*late)->status().ok());
  EXPECT_TRUE((*late)->times().missed_deadline);
  RequestOptions in_time = keep;
  in_time.deadline_ms = 100.0;
  auto ok = m.executor->submit(*a, nullptr, {{"x", x}}, in_time);
  m.drain(1.0);
  EXPECT_FALSE((*ok)->times().missed_deadline);
}

// Fences across sessions, with data: A writes its output into caller memory that B reads as its
// input, B waits on A's fence, and A waits on a caller fence (a render frame). Nothing runs
// before its fence; B sees A's finished output.
TEST(Executor, FencesOrderRequestsOfDifferentSessions) {
  Manual m;
  auto a = neg_chain("a", 3, m.workers);  // -x
  auto b = neg_chain("b", 1, m.workers);  // -(-x)
  ir::Tensor x = filled(5);
  ir::Tensor shared = ir::Tensor::allocate(ir::DType::kF32, {4, 16});
  auto frame = std::make_shared<Fence>("frame");
  RequestOptions ao = with_priority(Priority::kLow);
  ao.wait_for = {frame};
  ao.bound_outputs = {&shared};
  auto ra = m.executor->submit(*a, nullptr, {{"x", x}}, ao);
  ASSERT_TRUE(ra.ok());
  RequestOptions bo = with_priority(Priority::kRealtime);
  bo.wait_for = {(*ra)->fence()};
  auto rb = m.executor->submit(*b, nullptr, {{"x", shared}}, bo);
  ASSERT_TRUE(rb.ok());
  EXPECT_FALSE(m.executor->dispatch_one());  // everything waits on the frame
  frame->signal();
  const std::vector<uint64_t> order = m.drain(1.0);
  EXPECT_EQ(order, (std::vector<uint64_t>{(*ra)->id(), (*ra)->id(), (*ra)->id(), (*rb)->id()}));
  ASSERT_TRUE((*rb)->status().ok()) << (*rb)->status().to_string();
  expect_signed_copy(shared, x, -1.0f);
  expect_signed_copy((*rb)->outputs()[0], x, 1.0f);
  EXPECT_GE((*rb)->times().started_ms, (*ra)->times().finished_ms);
  // The trace joins the producer's fence to its waiter with a flow arrow.
  const nlohmann::json trace = m.executor->trace_json("test");
  int starts = 0, ends = 0;
  for (const nlohmann::json& e : trace["traceEvents"]) {
    starts += e["ph"] == "s";
    ends += e["ph"] == "f";
  }
  EXPECT_EQ(starts, 1);
  EXPECT_EQ(ends, 1);
}

TEST(Executor, AFailedDependencyFailsItsWaitersWithTheCause) {
  Manual m;
  auto a = neg_chain("a", 1, m.workers);
  auto b = neg_chain("b", 1, m.workers);
  ir::Tensor x = filled(0);
  auto camera = std::make_shared<Fence>("camera frame 7");
  RequestOptions ao;
  ao.wait_for = {camera};
  auto ra = m.executor->submit(*a, nullptr, {{"x", x}}, ao);
  RequestOptions bo;
  bo.wait_for = {(*ra)->fence()};
  auto rb = m.executor->submit(*b, nullptr, {{"x", x}}, bo);
  camera->fail(unavailable("camera disconnected"));
  m.drain();
  EXPECT_EQ((*ra)->status().code(), StatusCode::kUnavailable);
  EXPECT_NE((*ra)->status().message().find("camera frame 7"), std::string::npos);
  EXPECT_NE((*ra)->status().message().find("camera disconnected"), std::string::npos);
  EXPECT_EQ((*rb)->status().code(), StatusCode::kUnavailable);
  EXPECT_NE((*rb)->status().message().find("camera disconnected"), std::string::npos) << (*rb)->status().message();
  EXPECT_EQ((*ra)->times().units, 0u);
  EXPECT_EQ((*rb)->times().units, 0u);
  EXPECT_EQ(m.executor->queued(), 0u);
}

TEST(Executor, ARunErrorFailsTheRequestAndTheSessionRunsOn) {
  Manual m;
  auto a = neg_chain("a", 2, m.workers);
  ir::Tensor wrong = ir::Tensor::allocate(ir::DType::kF32, {2, 16});
  auto bad = m.executor->submit(*a, nullptr, {{"x", wrong}}, {});
  ir::Tensor x = filled(2);
  auto good = m.executor->submit(*a, nullptr, {{"x", x}}, {});
  m.drain();
  EXPECT_EQ((*bad)->status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*bad)->fence()->state(), Fence::State::kFailed);
  ASSERT_TRUE((*good)->status().ok());
  expect_signed_copy((*good)->outputs()[0], x, 1.0f);
}

TEST(Executor, ShutdownAndForgetCancelWhatIsQueued) {
  auto workers = std::make_shared<ThreadPool>(1);
  auto a = neg_chain("a", 1, workers);
  auto b = neg_chain("b", 3, workers);
  ir::Tensor x = filled(0);
  RequestPtr waiting, half_done;
  {
    Executor::Options o;
    o.manual = true;
    Executor executor(workers, o);
    RequestOptions never;
    never.wait_for = {std::make_shared<Fence>("never")};
    waiting = *executor.submit(*a, nullptr, {{"x", x}}, never);
    half_done = *executor.submit(*b, nullptr, {{"x", x}}, {});
    ASSERT_TRUE(executor.dispatch_one());
    auto forgotten = *executor.submit(*a, nullptr, {{"x", x}}, {});
    executor.forget(*a);
    EXPECT_EQ(waiting->status().code(), StatusCode::kCancelled);
    EXPECT_EQ(forgotten->status().code(), StatusCode::kCancelled);
    EXPECT_EQ(executor.queued(), 1u);
  }
  EXPECT_EQ(half_done->status().code(), StatusCode::kCancelled);
  // The session is usable again: the cancelled run left nothing bound.
  auto out = b->run({{"x", x}});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  expect_signed_copy((*out)[0], x, -1.0f);
}

// The real dispatcher: several threads submit to three sessions on two workers; every request
// completes with the right answer, its callback runs once, and its queue wait is recorded.
TEST(Executor, DispatcherThreadServesConcurrentSubmitters) {
  auto workers = std::make_shared<ThreadPool>(2);
  Executor executor(workers, Executor::Options{});
  std::vector<std::unique_ptr<Session>> sessions;
  for (int i = 0; i < 3; ++i) sessions.push_back(neg_chain("s" + std::to_string(i), i + 1, workers));
  std::atomic<int> callbacks{0};
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < 20; ++k) {
        ir::Tensor x = filled(static_cast<float>(t * 100 + k));
        RequestOptions o = with_priority(static_cast<Priority>(k % 4));
        o.on_done = [&](const Request&) { ++callbacks; };
        auto r = executor.submit(*sessions[static_cast<size_t>(t)], nullptr, {{"x", x}}, o);
        if (!r.ok() || !(*r)->wait().ok()) {
          ++failures;
          continue;
        }
        const float sign = (t + 1) % 2 ? -1.0f : 1.0f;
        for (int64_t i = 0; i < x.numel(); ++i)
          if ((*r)->outputs()[0].data<float>()[i] != sign * x.data<float>()[i]) ++failures;
        if ((*r)->stats().queue_wait_ms < 0 || (*r)->stats().run == 0) ++failures;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  // The callback runs after the fence is signalled: wait for the last one.
  for (int i = 0; i < 1000 && callbacks.load() < 60; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(callbacks.load(), 60);
}

TEST(Executor, PerformanceModesSetWorkersAndSpinning) {
  auto workers = std::make_shared<ThreadPool>(2);
  Executor::Options o;
  o.manual = true;
  Executor executor(workers, o);
  auto a = neg_chain("a", 1, workers);
  ir::Tensor x = filled(1);
  struct Case {
    PerformanceMode mode;
    size_t workers;
    bool spin;
  };
  for (const Case& c :
       {Case{PerformanceMode::kPowerSaver, 1, false}, Case{PerformanceMode::kBalanced, 1, false},
        Case{PerformanceMode::kBurst, 2, true}, Case{PerformanceMode::kSustainedHighPerformance, 2, true}}) {
    executor.set_mode(c.mode);
    auto r = executor.submit(*a, nullptr, {{"x", x}}, {});
    while (executor.dispatch_one()) {
    }
    ASSERT_TRUE((*r)->status().ok());
    EXPECT_EQ(workers->active_workers(), c.workers) << performance_mode_name(c.mode);
    EXPECT_EQ(workers->spin_us() > 0, c.spin) << performance_mode_name(c.mode);
  }
  // A request's own mode wins for its units.
  RequestOptions saver;
  saver.mode = PerformanceMode::kPowerSaver;
  auto r = executor.submit(*a, nullptr, {{"x", x}}, saver);
  while (executor.dispatch_one()) {
  }
  EXPECT_EQ(workers->active_workers(), 1u);
  EXPECT_NE(executor.mode_report().find("sustained_high_performance: 2 threads"), std::string::npos)
      << executor.mode_report();
}

}  // namespace
}  // namespace nfuse::runtime
