// Long ops and fused groups in pieces (the scheduler's units, CpuOp::pieces and
// FusedGroup::pieces): each case is large enough that its plan splits it (checked, so a change of
// the piece budget cannot quietly turn the test into one of whole ops), then two sessions of the
// same case with different data run unit by unit, alternately, as the runtime interleaves
// requests, with and without yields requested, and both must match the ref backend. At 1 and 2
// threads. Also ThreadPool::parallel_for_from's contract.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_conv_util.h"
#include "backends/cpu/cpu_op.h"
#include "core/aligned_storage.h"
#include "core/thread_pool.h"
#include "cpu_test_util.h"
#include "runtime/profile_summary.h"
#include "runtime/session.h"
#include "support/tolerances_kernels.h"

namespace nfuse {
namespace {

using cpu_test::OneNode;

// A MobileNet block, expand 1x1 -> depthwise 3x3 -> project 1x1 (+ Relu6s), for the fusion
// backend: built as OneNode is (build(), feeds(), run()).
struct Block {
  ir::Tensor x, w1, b1, wd, bd, w2, b2;

  std::unique_ptr<ir::Graph> build() const {
    auto g = std::make_unique<ir::Graph>();
    auto value = [&](const std::string& name, const ir::Tensor* constant) {
      ir::Value* v = constant ? g->add_value(name, {ir::DType::kF32, ir::Shape::from_dims(constant->dims())}).value()
                              : g->add_value(name).value();
      if (constant) v->constant = *constant;
      return v;
    };
    ir::Value* in = g->add_value("x", {ir::DType::kF32, ir::Shape::from_dims(x.dims())}).value();
    g->inputs().push_back(in);
    auto conv = [&](ir::Value* from, const ir::Tensor& w, const ir::Tensor& b, int64_t k, int64_t group,
                    const std::string& name) {
      ir::Value* y = value(name + "_y", nullptr);
      ir::Attributes a;
      a.set("kernel_shape", std::vector<int64_t>{k, k});
      a.set("pads", std::vector<int64_t>{k / 2, k / 2, k / 2, k / 2});
      a.set("group", group);
      cpu_test::set_activation(a, "Clip", {0.0f, 6.0f});
      g->add_node("Conv", name, {from, value(name + "_w", &w), value(name + "_b", &b)}, {y}, a)->opset = 17;
      return y;
    };
    ir::Value* e = conv(in, w1, b1, 1, 1, "expand");
    ir::Value* d = conv(e, wd, bd, 3, wd.dim(0), "dw");
    g->outputs().push_back(conv(d, w2, b2, 1, 1, "project"));
    g->relink();
    return g;
  }
  runtime::NamedTensors feeds() const { return {{"x", x}}; }
  Result<ir::Tensor> run(const std::string& backend, int threads) const {
    runtime::SessionOptions o;
    o.backend = backend;
    o.threads = threads;
    o.optimize = false;
    NFUSE_ASSIGN_OR_RETURN(auto s, runtime::Session::create(build(), o));
    NFUSE_ASSIGN_OR_RETURN(auto outs, s->run(feeds()));
    return outs[0];
  }
};

std::map<std::string, std::vector<int64_t>> dims_of(const runtime::NamedTensors& feeds) {
  std::map<std::string, std::vector<int64_t>> dims;
  for (const auto& [name, t] : feeds) dims[name] = t.dims();
  return dims;
}

// Units of the plan's steps on `backend` beyond one per node: what splitting added there.
size_t extra_units(runtime::Session& s, const runtime::NamedTensors& feeds, const std::string& backend) {
  auto plan = s.prepare(dims_of(feeds));
  if (!plan.ok()) return 0;
  size_t units = 0, nodes = 0;
  for (const compile::Step& step : (*plan)->steps) {
    if (step.partition.backend != backend) continue;
    units += step.compiled->units();
    nodes += step.partition.nodes.size();
  }
  return units > nodes ? units - nodes : 0;
}

// The bound an element may differ from ref by: (ref value, largest |ref|) -> tolerance. The
// project's own (tests/support/tolerances_kernels.h): a dot product's for one op, a chain's for a
// fused group.
using Tolerance = std::function<double(double ref, double max_abs_ref)>;
Tolerance dot_tol(size_t k) {
  return [k](double r, double) { return test::f32_gemm_tol(r, k); };
}
Tolerance wino_tol(size_t k) {
  return [k](double r, double) { return test::f32_wino43_tol(r, k); };
}
const Tolerance kChainTol = [](double, double max_abs) { return test::f32_chain_tol(max_abs); };

void expect_close(const ir::Tensor& got, const ir::Tensor& ref, const Tolerance& tol, const std::string& what) {
  ASSERT_EQ(got.dims(), ref.dims()) << what;
  double max_abs = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) max_abs = std::max(max_abs, std::fabs(double{ref.data<float>()[i]}));
  for (int64_t i = 0; i < ref.numel(); ++i) {
    const double r = ref.data<float>()[i];
    const double d = std::fabs(double{got.data<float>()[i]} - r);
    ASSERT_LE(d, tol(r, max_abs)) << what << ": first mismatch at flat index " << i << " (seed " << cpu_test::kSeed
                                  << ")";
  }
}

// Two sessions of `make` (a case, different data each) on `backend` sharing one pool, as a
// runtime's do, run unit by unit alternately: with a yield requested before every unit (each
// piece stops at the end of its share: the runtime with requests waiting), and with none (the
// first piece runs the whole op: nothing waiting).
template <typename Make>
void check_interleaved(const Make& make, const std::string& backend, const std::string& what, const Tolerance& tol) {
  for (int threads : {1, 2})
    for (bool yield : {true, false}) {
      const std::string at =
          what + " on " + backend + ", " + std::to_string(threads) + " threads" + (yield ? ", yielding" : "");
      auto pool = std::make_shared<ThreadPool>(threads);
      std::mt19937 rng(cpu_test::kSeed);
      const auto first = make(rng);
      const decltype(first) cases[2] = {first, make(rng)};
      std::unique_ptr<runtime::Session> sessions[2];
      runtime::NamedTensors feeds[2];
      runtime::RunCursor cursors[2];
      for (int i = 0; i < 2; ++i) {
        runtime::SessionOptions o;
        o.backend = backend;
        o.threads = threads;
        o.optimize = false;
        o.workers = pool;
        auto s = runtime::Session::create(cases[i].build(), o);
        ASSERT_TRUE(s.ok()) << at << ": " << s.status().to_string();
        sessions[i] = std::move(*s);
        feeds[i] = cases[i].feeds();
        ASSERT_GT(extra_units(*sessions[i], feeds[i], backend), 0u) << at << ": the plan did not split it";
        ASSERT_TRUE(sessions[i]->start_run(feeds[i], nullptr, nullptr, nullptr, &cursors[i]).ok()) << at;
      }
      bool done[2] = {false, false};
      while (!done[0] || !done[1]) {
        for (int i = 0; i < 2; ++i) {
          if (done[i]) continue;
          if (yield) pool->request_yield();
          auto r = sessions[i]->next_unit(cursors[i]);
          ASSERT_TRUE(r.ok()) << at << ": " << r.status().to_string();
          done[i] = *r;
        }
      }
      for (int i = 0; i < 2; ++i) {
        auto outs = sessions[i]->finish_run(cursors[i]);
        ASSERT_TRUE(outs.ok()) << at << ": " << outs.status().to_string();
        auto ref = cases[i].run("ref", 1);
        ASSERT_TRUE(ref.ok()) << at << ": ref: " << ref.status().to_string();
        expect_close((*outs)[0], *ref, tol, at + ", session " + std::to_string(i));
        // Again, through run(): the same session's pieces back to back, from their start.
        backends::RunProfile profile;
        auto again = sessions[i]->run(feeds[i], &profile);
        ASSERT_TRUE(again.ok()) << at << ": " << again.status().to_string();
        expect_close((*again)[0], *ref, tol, at + ", session " + std::to_string(i) + ", second run");
        // The profile times a node once per unit, and the summary still counts each node once.
        size_t counted = 0;
        const nlohmann::json summary = runtime::profile_summary_json(profile);
        for (const auto& type : summary["op_types"]) counted += type["nodes"].get<size_t>();
        EXPECT_EQ(counted, sessions[i]->graph().nodes().size()) << at;
        EXPECT_GT(profile.nodes.size(), counted) << at << ": pieces not timed";
      }
    }
}

auto conv(int64_t c, int64_t h, int64_t w, int64_t m, int64_t k, int64_t stride, bool residual = false) {
  return [=](std::mt19937& rng) {
    OneNode n;
    n.op = "Conv";
    n.inputs.push_back({cpu_test::random_tensor({1, c, h, w}, rng), false});
    n.inputs.push_back({cpu_test::random_tensor({m, c, k, k}, rng, -0.2f, 0.2f), true});
    n.inputs.push_back({cpu_test::random_tensor({m}, rng), true});
    n.attrs.set("kernel_shape", std::vector<int64_t>{k, k});
    n.attrs.set("strides", std::vector<int64_t>{stride, stride});
    const int64_t pad = k / 2;
    n.attrs.set("pads", std::vector<int64_t>{pad, pad, pad, pad});
    cpu_test::set_activation(n.attrs, "Relu", {});
    if (residual) {
      const int64_t ho = (h + 2 * pad - k) / stride + 1, wo = (w + 2 * pad - k) / stride + 1;
      n.residual = cpu_test::random_tensor({1, m, ho, wo}, rng);
    }
    return n;
  };
}

TEST(OpPieces, GemmConv) {
  backends::cpu::ScopedConvAlgorithm force(backends::cpu::ConvAlgorithm::kIm2colGemm);
  check_interleaved(conv(64, 57, 61, 96, 3, 2, true), "cpu", "3x3 s2 conv 64->96 at 57x61", dot_tol(64 * 9));
}

TEST(OpPieces, WinogradConv) {
  backends::cpu::ScopedConvAlgorithm force(backends::cpu::ConvAlgorithm::kWinograd);
  check_interleaved(conv(64, 58, 54, 64, 3, 1, true), "cpu", "Winograd 3x3 conv 64->64 at 58x54", wino_tol(64 * 9));
}

TEST(OpPieces, PixelRowsConv) {
  backends::cpu::ScopedConvAlgorithm force(backends::cpu::ConvAlgorithm::kPixelRows);
  check_interleaved(conv(256, 7, 9, 384, 3, 1, true), "cpu", "pixel-rows 3x3 conv 256->384 at 7x9", dot_tol(256 * 9));
}

TEST(OpPieces, SmallChannelConv) {
  check_interleaved(conv(3, 481, 322, 32, 3, 1), "cpu", "3x3 conv 3->32 at 481x322", dot_tol(3 * 9));
}

TEST(OpPieces, LinearResize) {
  check_interleaved(
      [](std::mt19937& rng) {
        OneNode n;
        n.op = "Resize";
        n.inputs.push_back({cpu_test::random_tensor({1, 7, 120, 90}, rng), false});
        n.inputs.push_back({ir::Tensor(), false});  // roi
        ir::Tensor scales = ir::Tensor::allocate(ir::DType::kF32, {4});
        const float s[4] = {1, 1, 8, 8};
        std::copy(s, s + 4, scales.data<float>());
        n.inputs.push_back({scales, true});
        n.attrs.set("mode", std::string("linear"));
        return n;
      },
      "cpu", "linear Resize x8 to 960x720", dot_tol(4));
}

TEST(OpPieces, FusedGroup) {
  check_interleaved(
      [](std::mt19937& rng) {
        const int64_t c = 16, m = 96;
        return Block{cpu_test::random_tensor({1, c, 203, 150}, rng),
                     cpu_test::random_tensor({m, c, 1, 1}, rng, -0.3f, 0.3f),
                     cpu_test::random_tensor({m}, rng),
                     cpu_test::random_tensor({m, 1, 3, 3}, rng, -0.3f, 0.3f),
                     cpu_test::random_tensor({m}, rng),
                     cpu_test::random_tensor({c, m, 1, 1}, rng, -0.3f, 0.3f),
                     cpu_test::random_tensor({c}, rng)};
      },
      "fusion", "expand/dw/project block 16->96->16 at 203x150", kChainTol);
}

// Small items (depthwise planes, lookup planes) go to the pool in groups: each item runs once,
// a group holds at least the minimum work unless that would leave fewer than 4 tasks a thread,
// and 960 int8 planes of 7x7 become 8 tasks on 2 threads, not 960.
TEST(OpPieces, RunItemsRunsEveryItemOnceInGroups) {
  EXPECT_EQ(backends::cpu::items_per_task(960, 49, 2, backends::cpu::kMinTaskOutputs), 120u);
  for (size_t threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (size_t items : {0, 1, 7, 960, 1001}) {
      for (size_t work : {0, 1, 49, 100000}) {
        SCOPED_TRACE(testing::Message() << "threads " << threads << " items " << items << " work " << work);
        const size_t per = backends::cpu::items_per_task(items, work, threads, backends::cpu::kMinTaskOutputs);
        EXPECT_GE(per, 1u);
        EXPECT_LE(per, std::max<size_t>(1, items / (4 * threads)));
        const size_t for_work = backends::cpu::kMinTaskOutputs / std::max<size_t>(work, 1);
        if (items / (4 * threads) >= for_work) {
          EXPECT_EQ(per, std::max<size_t>(1, for_work));  // plenty of items: groups of the minimum work
        }
        std::vector<std::atomic<int>> seen(items);
        backends::cpu::run_items(pool, items, per, [&](size_t i, size_t worker) {
          EXPECT_LT(worker, threads);
          seen[i].fetch_add(1);
        });
        for (size_t i = 0; i < items; ++i) EXPECT_EQ(seen[i].load(), 1) << "item " << i;
      }
    }
  }
}

TEST(OpPieces, ParallelForFromStopsOnlyPastMustWhileYieldIsRequested) {
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    std::vector<std::atomic<int>> runs(64);
    auto count_run = [&](size_t t, size_t) { runs[t].fetch_add(1); };
    // No yield: everything from begin.
    EXPECT_EQ(pool.parallel_for_from(5, 10, 64, TaskFn(count_run)), 64u);
    for (size_t t = 0; t < 64; ++t) ASSERT_EQ(runs[t].load(), t < 5 ? 0 : 1) << "task " << t;
    // A yield requested: tasks before `must` all run, every task before the returned one ran
    // exactly once, none after it.
    for (auto& r : runs) r.store(0);
    pool.request_yield();
    const size_t stop = pool.parallel_for_from(3, 20, 64, TaskFn(count_run));
    pool.clear_yield();
    EXPECT_GE(stop, 20u);
    EXPECT_LE(stop, 20u + static_cast<size_t>(threads) - 1) << "each thread claims at most one task past `must`";
    for (size_t t = 0; t < 64; ++t) ASSERT_EQ(runs[t].load(), t >= 3 && t < stop ? 1 : 0) << "task " << t;
    // Resuming from there finishes the rest.
    EXPECT_EQ(pool.parallel_for_from(stop, stop, 64, TaskFn(count_run)), 64u);
    for (size_t t = 0; t < 64; ++t) ASSERT_EQ(runs[t].load(), t >= 3 ? 1 : 0) << "task " << t;
    EXPECT_EQ(pool.parallel_for_from(64, 64, 64, TaskFn(count_run)), 64u);  // nothing left
  }
}

// RunContext::run_tasks over pieces: with nobody waiting the first piece runs the whole loop and
// the others find nothing left; with a yield requested each piece stops at its share's end
// (exactly, on one thread; a claim per extra thread past it). Every task runs once either way.
TEST(OpPieces, RunTasksRunsOnPastItsShareUnlessAYieldIsRequested) {
  for (int threads : {1, 2}) {
    for (bool yield : {false, true}) {
      ThreadPool pool(threads);
      Scratch scratch;
      backends::cpu::RunContext rc{pool, scratch};
      size_t progress = 0;
      rc.progress = &progress;
      rc.pieces = 4;
      constexpr size_t kCount = 40;
      std::vector<std::atomic<int>> runs(kCount);
      auto task = [&](size_t t, size_t) { runs[t].fetch_add(1); };
      const std::string at = std::to_string(threads) + " threads" + (yield ? ", yielding" : "");
      for (size_t piece = 0; piece < rc.pieces; ++piece) {
        rc.piece = piece;
        if (yield) pool.request_yield();
        rc.run_tasks(kCount, task);
        pool.clear_yield();
        const size_t share_end = kCount * (piece + 1) / rc.pieces;
        if (!yield) {
          EXPECT_EQ(progress, kCount) << at << ", piece " << piece;
        } else {
          EXPECT_GE(progress, share_end) << at << ", piece " << piece;
          EXPECT_LE(progress, std::min(kCount, share_end + static_cast<size_t>(threads) - 1))
              << at << ", piece " << piece;
        }
      }
      for (size_t t = 0; t < kCount; ++t) ASSERT_EQ(runs[t].load(), 1) << at << ", task " << t;
    }
  }
}

}  // namespace
}  // namespace nfuse
