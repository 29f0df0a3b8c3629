// Partitioned plans end to end: a Session with backend "auto" (or pins) runs several partitions
// on different backends and matches the ref backend; a new input shape gets a new plan whose
// placement may differ; device profiles load, save and fail with the file and field named.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <set>

#include "backends/device_profile.h"
#include "compile/plan_traffic.h"
#include "core/thread_pool.h"
#include "partition/cost_model.h"
#include "partition_test_util.h"
#include "runtime/session.h"
#include "support/tolerances.h"

namespace nfuse::partition_test {
namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "nfuse_partition_" + name;
}

ir::Tensor seeded_input(std::vector<int64_t> dims, uint32_t seed) {
  ir::Tensor t = ir::Tensor::allocate(ir::DType::kF32, std::move(dims));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

// Runs `model` on ref and under `options`; outputs must agree within the dot-product tolerance.
void expect_matches_ref(const OnnxBuilder& model, const runtime::SessionOptions& options, const ir::Tensor& x,
                        size_t min_steps) {
  auto ref = runtime::Session::create(load(model), runtime::SessionOptions{});
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  auto under_test = runtime::Session::create(load(model), options);
  ASSERT_TRUE(under_test.ok()) << under_test.status().to_string();
  auto want = (*ref)->run({{"x", x}});
  auto got = (*under_test)->run({{"x", x}});
  ASSERT_TRUE(want.ok()) << want.status().to_string();
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  auto plan = (*under_test)->prepare({{"x", x.dims()}});
  ASSERT_TRUE(plan.ok());
  ASSERT_TRUE((*plan)->partition_report);
  EXPECT_GE((*plan)->steps.size(), min_steps);
  const ir::Tensor& a = (*want)[0];
  const ir::Tensor& b = (*got)[0];
  ASSERT_EQ(a.dims(), b.dims());
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double r = a.data<float>()[i];
    ASSERT_NEAR(b.data<float>()[i], r, test::f32_dot_tol(r, 16 * 27)) << "index " << i;
  }
}

TEST(PartitionPlan, AutoPlanWithSeveralBackendsMatchesRef) {
  const std::string profile = temp_path("fast_fake.json");
  ASSERT_TRUE(backends::save_device_profile(test_profile(4.0, 0.0), profile).ok());
  runtime::SessionOptions o;
  o.backend = "auto";
  o.optimize = false;  // keep the Relus as nodes, so partitions alternate
  o.partition.prefer = {kFake, "cpu"};
  o.partition.pins["sig2"] = "ref";
  o.partition.device_profile = profile;
  // fake_npu (on cpu kernels), cpu, fake_npu, ref, fake_npu, cpu: six steps.
  expect_matches_ref(small_cnn(17, 13), o, seeded_input({1, 3, 17, 13}, 7), 6);
  // With the optimizer's fusions (Relu into Conv) and the built-in default order.
  runtime::SessionOptions d;
  d.backend = "auto";
  expect_matches_ref(small_cnn(17, 13), d, seeded_input({1, 3, 17, 13}, 8), 1);
  std::remove(profile.c_str());
}

// Real cpu and fusion partitions in one plan match ref, at 1 and 2 threads, and all run on the
// plan's one intra-op pool: with a pool per partition, the idle pools' workers spun on the cores
// the running partition needed (the OCR detector under auto ran 2x slower at 2 threads than at 1).
TEST(PartitionPlan, RealFusionBackendPartitionsMatchRefOnOneThreadPool) {
  if (partition::default_prefer().front() != "fusion") GTEST_SKIP() << "fusion backend not registered";
  for (int threads : {1, 2}) {
    // Pins make fusion run its ops whatever the cost model thinks of these small shapes.
    runtime::SessionOptions o;
    o.backend = "auto";
    o.threads = threads;
    o.partition.pins = {{"Conv", "fusion"}, {"MaxPool", "fusion"}};
    expect_matches_ref(small_cnn(17, 13), o, seeded_input({1, 3, 17, 13}, 10), 2);
    auto s = runtime::Session::create(load(small_cnn(17, 13)), o);
    ASSERT_TRUE(s.ok());
    auto plan = (*s)->prepare({{"x", {1, 3, 17, 13}}});
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    int on_fusion = 0;
    for (const auto& p : (*plan)->partition_report->nodes) on_fusion += p.backend == "fusion";
    EXPECT_GE(on_fusion, 4) << placements(*(*plan)->partition_report);
    std::set<std::string> backends;
    const ThreadPool* shared = nullptr;
    for (const auto& step : (*plan)->steps) {
      const ThreadPool* p = step.compiled->intra_op_pool();
      ASSERT_NE(p, nullptr) << step.partition.backend;
      if (!shared) shared = p;
      EXPECT_EQ(p, shared) << step.partition.backend << " partition has a pool of its own";
      backends.insert(step.partition.backend);
    }
    EXPECT_EQ(backends, (std::set<std::string>{"cpu", "fusion"}));
    EXPECT_EQ(shared->threads(), static_cast<size_t>(threads));
  }
}

// Sessions given one set of workers (a runtime's) run every partition of every plan on them and
// still match ref; workers of another thread count are not used (the plan makes its own).
TEST(PartitionPlan, SessionsShareTheWorkersTheyAreGiven) {
  auto workers = std::make_shared<ThreadPool>(2);
  auto pools_of = [](const compile::Plan& plan) {
    std::set<const ThreadPool*> pools;
    for (const auto& step : plan.steps)
      if (const ThreadPool* p = step.compiled->intra_op_pool()) pools.insert(p);  // ref has none
    return pools;
  };
  for (const char* backend : {"cpu", "auto"}) {
    runtime::SessionOptions o;
    o.backend = backend;
    o.threads = 2;
    o.workers = workers;
    if (std::string(backend) == "auto") expect_matches_ref(small_cnn(17, 13), o, seeded_input({1, 3, 17, 13}, 10), 1);
    auto a = runtime::Session::create(load(small_cnn(17, 13)), o);
    auto b = runtime::Session::create(load(small_cnn(9, 11)), o);
    ASSERT_TRUE(a.ok() && b.ok());
    auto pa = (*a)->prepare({{"x", {1, 3, 17, 13}}});
    auto pb = (*b)->prepare({{"x", {1, 3, 9, 11}}});
    ASSERT_TRUE(pa.ok() && pb.ok());
    EXPECT_EQ(pools_of(**pa), std::set<const ThreadPool*>{workers.get()}) << backend;
    EXPECT_EQ(pools_of(**pb), std::set<const ThreadPool*>{workers.get()}) << backend;
  }
  runtime::SessionOptions one;
  one.backend = "cpu";
  one.threads = 1;
  one.workers = workers;  // two workers, one thread asked for: not these
  auto c = runtime::Session::create(load(small_cnn(17, 13)), one);
  ASSERT_TRUE(c.ok());
  auto pc = (*c)->prepare({{"x", {1, 3, 17, 13}}});
  ASSERT_TRUE(pc.ok());
  for (const ThreadPool* p : pools_of(**pc)) {
    EXPECT_NE(p, workers.get());
    EXPECT_EQ(p->threads(), 1u);
  }
}

// A Reshape / Flatten on a backend that copies nothing into an output already holding its input
// (cpu, ref) gets one arena buffer for both, live as long as either: r1 and its reshape share one,
// r3 and its reshape another, which must outlive r3 (Neg's output must not take it before the Add
// reads r4); a Reshape whose output is a graph output keeps its own tensor. Both backends give
// the computed values.
TEST(PartitionPlan, ReshapesShareTheirInputsBuffer) {
  OnnxBuilder b;
  b.input("x", kF, {1, 4, 6, 6});
  auto shape = [&](const std::string& name, std::vector<int64_t> dims) {
    auto* t = b.model().mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(dims.size()));
    for (int64_t d : dims) t->add_int64_data(d);
  };
  shape("flat", {1, 144});
  shape("back", {1, 4, 6, 6});
  b.node("Relu", {"x"}, {"r1"}, "relu1");
  b.node("Reshape", {"r1", "flat"}, {"r2"}, "reshape1");
  b.node("Sigmoid", {"r2"}, {"r3"}, "sig");
  b.node("Reshape", {"r3", "back"}, {"r4"}, "reshape2");
  b.node("Neg", {"r1"}, {"r5"}, "neg");  // a new buffer while r4 (alive through r3's) is still unread
  b.node("Add", {"r4", "r5"}, {"y"}, "add");
  b.node("Reshape", {"r1", "flat"}, {"z"}, "reshape_out");
  float_output(b, "y");
  float_output(b, "z");
  const ir::Tensor x = seeded_input({1, 4, 6, 6}, 12);
  std::vector<ir::Tensor> outs[2];
  int k = 0;
  for (const char* backend : {"ref", "cpu"}) {
    runtime::SessionOptions o;
    o.backend = backend;
    o.optimize = false;
    auto s = runtime::Session::create(load(b), o);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    auto plan = (*s)->prepare({{"x", {1, 4, 6, 6}}});
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    auto offset = [&](const char* name) {
      for (const auto& pv : (*plan)->values)
        if (pv.value && pv.value->name == name) return pv.arena_offset;
      return int64_t{-2};
    };
    EXPECT_GE(offset("r1"), 0) << backend;
    EXPECT_EQ(offset("r2"), offset("r1")) << backend;
    EXPECT_GE(offset("r3"), 0) << backend;
    EXPECT_EQ(offset("r4"), offset("r3")) << backend;
    EXPECT_NE(offset("r3"), offset("r1")) << backend << ": r1 is still read by the Add";
    EXPECT_EQ(offset("z"), -1) << backend << ": a graph output is its own tensor";
    // Traffic counts no bytes for the two aliased Reshapes: Relu, Sigmoid, Neg, Reshape-to-output
    // move 2 tensors each, Add 3, of 144 floats.
    EXPECT_EQ(compile::plan_traffic(**plan).layerwise_bytes, 11 * 144 * 4) << backend;
    auto r = (*s)->run({{"x", x}});
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    outs[k++] = *r;
  }
  for (size_t o = 0; o < 2; ++o) {
    ASSERT_EQ(outs[0][o].numel(), outs[1][o].numel());
    for (int64_t i = 0; i < outs[0][o].numel(); ++i) {
      const float rv = outs[0][o].data<float>()[i];
      EXPECT_NEAR(outs[1][o].data<float>()[i], rv, 1e-6f * (1.0f + std::fabs(rv))) << "output " << o << " at " << i;
    }
  }
  // And the values are the computation's, not an aliasing accident: z = relu(x), y = sigmoid(z) - z.
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float r1 = std::max(0.0f, x.data<float>()[i]);
    for (int k2 = 0; k2 < 2; ++k2) {
      ASSERT_FLOAT_EQ(outs[k2][1].data<float>()[i], r1);
      ASSERT_NEAR(outs[k2][0].data<float>()[i], 1.0f / (1.0f + std::exp(-r1)) - r1, 1e-6f);
    }
  }
}

TEST(PartitionPlan, NamedBackendWithPinsRunsTheSplitPlan) {
  runtime::SessionOptions o;
  o.backend = "cpu";
  o.optimize = false;
  o.partition.pins["Sigmoid"] = "ref";
  // cpu, ref, cpu, ref, cpu: a named backend keeps every node it can run (no cost passes).
  expect_matches_ref(small_cnn(), o, seeded_input({1, 3, 16, 16}, 9), 5);
}

TEST(PartitionPlan, SessionAcceptsAutoAndRejectsUnknownNames) {
  runtime::SessionOptions o;
  o.backend = "auto";
  EXPECT_TRUE(runtime::Session::create(load(small_cnn()), o).ok());
  o.partition.prefer = {"nope", "cpu"};
  auto bad = runtime::Session::create(load(small_cnn()), o);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kNotFound);
  runtime::SessionOptions p;
  p.backend = "cpu";
  p.partition.pins["conv1"] = "nope";
  EXPECT_EQ(runtime::Session::create(load(small_cnn()), p).status().code(), StatusCode::kNotFound);
  // No placement options: the single-backend path and its error text are unchanged.
  runtime::SessionOptions plain;
  plain.backend = "cpu";
  auto s = runtime::Session::create(load(small_cnn()), plain);
  ASSERT_TRUE(s.ok());
  auto plan = (*s)->prepare({{"x", {1, 3, 16, 16}}});
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE((*plan)->partition_report);
  EXPECT_EQ((*plan)->steps.size(), 1u);
}

// x [1,16,N,N] -> four Relus. A backend that keeps intermediates on chip but computes at half
// speed pays only once the intermediates no longer fit L2: a shape change flips the placement.
OnnxBuilder relu_chain() {
  OnnxBuilder b;
  b.input("x", kF, {1, 16, -1, -1});
  std::string prev = "x";
  for (int i = 0; i < 4; ++i) {
    const std::string next = "r" + std::to_string(i);
    b.node("Relu", {prev}, {next}, "relu" + std::to_string(i));
    prev = next;
  }
  float_output(b, prev);
  return b;
}

TEST(PartitionPlan, NewInputShapeGetsANewPlanAndPlacement) {
  backends::DeviceProfile d = test_profile(0.5, 1.0);
  for (backends::BackendProfile& p : d.backends) {
    if (p.backend != kFakeChain) continue;
    p.l2_gbps = d.host().l2_gbps;
    p.dram_gbps = d.host().dram_gbps;
  }
  const std::string profile = temp_path("on_chip_fake.json");
  ASSERT_TRUE(backends::save_device_profile(d, profile).ok());
  runtime::SessionOptions o;
  o.backend = "auto";
  o.optimize = false;
  o.partition.prefer = {kFakeChain, "cpu"};
  o.partition.device_profile = profile;
  auto s = runtime::Session::create(load(relu_chain()), o);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  // 16x32x32 f32 = 64 KiB: everything stays in L2 on cpu, the slower fake does not pay.
  auto small = (*s)->prepare({{"x", {1, 16, 32, 32}}});
  // 16x256x256 f32 = 4 MiB: cpu streams every tensor through DRAM, the fake keeps them on chip.
  auto large = (*s)->prepare({{"x", {1, 16, 256, 256}}});
  ASSERT_TRUE(small.ok()) << small.status().to_string();
  ASSERT_TRUE(large.ok()) << large.status().to_string();
  EXPECT_NE(*small, *large);
  EXPECT_EQ(placements(*(*small)->partition_report), "relu0:cpu relu1:cpu relu2:cpu relu3:cpu ");
  EXPECT_EQ(placements(*(*large)->partition_report),
            "relu0:fake_chain_npu relu1:fake_chain_npu relu2:fake_chain_npu relu3:fake_chain_npu ");
  EXPECT_EQ(*(*s)->prepare({{"x", {1, 16, 32, 32}}}), *small);  // cached
  auto out = (*s)->run({{"x", seeded_input({1, 16, 256, 256}, 3)}});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  std::remove(profile.c_str());
}

TEST(DeviceProfile, SavesLoadsAndNamesTheBadField) {
  const std::string path = temp_path("profile.json");
  backends::DeviceProfile d = test_profile(3.0, 0.25);
  ASSERT_TRUE(backends::save_device_profile(d, path).ok());
  auto back = backends::load_device_profile(path);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->source, path);
  ASSERT_EQ(back->backends.size(), d.backends.size());
  EXPECT_EQ(back->for_backend(kFake).gflops_f32, d.for_backend(kFake).gflops_f32);
  EXPECT_EQ(back->host().gflops_f32, d.for_backend("cpu").gflops_f32);
  // Unlisted: a registered backend derives its numbers from the host's (ref: scalar, 20x below
  // in compute); an unknown name is costed like the host.
  backends::DeviceProfile host_only = *back;
  std::erase_if(host_only.backends, [](const backends::BackendProfile& p) { return p.backend != "cpu"; });
  EXPECT_DOUBLE_EQ(host_only.for_backend("ref").gflops_f32 * 20.0, host_only.host().gflops_f32);
  EXPECT_DOUBLE_EQ(host_only.for_backend("ref").dram_gbps, host_only.host().dram_gbps);
  EXPECT_EQ(host_only.for_backend("new_backend").gflops_f32, d.for_backend("cpu").gflops_f32);
  EXPECT_EQ(host_only.for_backend("new_backend").backend, "new_backend");

  std::ofstream(path) << R"({"version": 1, "backends": [{"backend": "cpu", "gflops_f32": "fast"}]})";
  auto bad = backends::load_device_profile(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find(path), std::string::npos);
  EXPECT_NE(bad.status().message().find("backends[0].gflops_f32 must be a number"), std::string::npos)
      << bad.status().message();
  std::ofstream(path) << R"({"version": 1, "backends": [)";
  auto broken = backends::load_device_profile(path);
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find("not valid JSON"), std::string::npos);
  std::remove(path.c_str());
  EXPECT_EQ(backends::load_device_profile(path).status().code(), StatusCode::kUnavailable);
}

TEST(CostModel, WinogradOnCpuRefScalarOnChipTensorsAndPartialOverlap) {
  OnnxBuilder b;
  b.input("x", kF, {1, 32, 32, 32});
  random_init(b, "w", {32, 32, 3, 3}, 1);
  set_ints_attr(b.node("Conv", {"x", "w"}, {"y"}, "conv"), "pads", {1, 1, 1, 1});
  float_output(b, "y");
  auto g = load(b);
  ASSERT_TRUE(g);
  const ir::Node& conv = *g->nodes()[0];
  partition::CostModel cost(
      backends::default_device_profile(), backends::PlanView(*g),
      [](const ir::Value* v) { return v->constant.has_value(); }, 1);
  const auto cpu = cost.estimate(conv, "cpu", nullptr);
  const auto fusion = cost.estimate(conv, "fusion", nullptr);
  const auto ref = cost.estimate(conv, "ref", nullptr);
  const double macs = 32.0 * 32 * 32 * 32 * 9;
  EXPECT_DOUBLE_EQ(cpu.flops, 2.0 * macs / 2.25);  // Winograd F(4,3)
  EXPECT_DOUBLE_EQ(fusion.flops, cpu.flops);       // the same Winograd kernels, in strips
  EXPECT_DOUBLE_EQ(ref.flops, 2.0 * macs);         // direct: every MAC
  EXPECT_NEAR(ref.compute_us / (2.25 * fusion.compute_us), 20.0, 1e-9);
  // 128 KiB in, 128 KiB out: both fit L2, so the weights-free traffic is L2-bound either way.
  EXPECT_DOUBLE_EQ(cpu.bytes, 2.0 * 32 * 32 * 32 * 4);
  // A tensor the caller says stays on chip is charged at L2 even when it would not fit.
  OnnxBuilder big;
  big.input("x", kF, {1, 64, 128, 128});
  big.node("Relu", {"x"}, {"y"}, "relu");
  float_output(big, "y");
  auto gb = load(big);
  const ir::Node& relu = *gb->nodes()[0];
  const auto off = cost.estimate(relu, "fusion", nullptr);
  const auto on = cost.estimate(relu, "fusion", [](const ir::Value*) { return true; });
  const backends::BackendProfile p = backends::default_device_profile().for_backend("fusion");
  EXPECT_NEAR(off.memory_us / on.memory_us, p.l2_gbps / p.dram_gbps, 1e-9);
  // Compute and memory overlap only partly: the shorter one is charged at half, so a layer
  // streaming through DRAM costs more than its arithmetic alone even when that dominates.
  for (const auto* e : {&cpu, &off, &on}) {
    EXPECT_NEAR(e->us, std::max(e->compute_us, e->memory_us) + 0.5 * std::min(e->compute_us, e->memory_us) + p.step_us,
                1e-9);
  }
  EXPECT_GT(cpu.us, cpu.compute_us + p.step_us);
  EXPECT_DOUBLE_EQ(cost.boundary_us("cpu", "cpu", 1 << 20), 0.0);
  EXPECT_DOUBLE_EQ(cost.boundary_us("cpu", "fusion", 1 << 20), p.boundary_us);  // host memory shared: no copy
}

}  // namespace
}  // namespace nfuse::partition_test
