#include <gtest/gtest.h>

#include <cmath>

#include "ir/graph.h"
#include "runtime/session.h"

namespace nfuse {
namespace {

std::unique_ptr<ir::Graph> identity_chain() {
  auto g = std::make_unique<ir::Graph>();
  g->name = "chain";
  g->opsets[""] = 13;
  ir::TensorType t{ir::DType::kF32, ir::Shape({ir::Dim::symbolic("n"), ir::Dim(3)})};
  ir::Value* x = g->add_value("x", t).value();
  ir::Value* y = g->add_value("y", t).value();
  ir::Value* z = g->add_value("z", t).value();
  g->inputs().push_back(x);
  g->outputs().push_back(z);
  g->add_node("Identity", "second", {y}, {z});
  g->add_node("Identity", "first", {x}, {y});
  EXPECT_TRUE(g->topo_sort().ok());
  return g;
}

TEST(Session, RunsIdentityChainWithSymbolicBatch) {
  auto g = identity_chain();
  ASSERT_TRUE(g->verify().ok()) << g->verify().to_string();
  EXPECT_EQ(g->nodes()[0]->name, "first");
  auto session = runtime::Session::create(std::move(g), {});
  ASSERT_TRUE(session.ok()) << session.status().to_string();
  for (int64_t n : {2, 5}) {
    ir::Tensor x = ir::Tensor::allocate(ir::DType::kF32, {n, 3});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i) * 0.5f;
    auto out = (*session)->run({{"x", x}});
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    ASSERT_EQ(out->size(), 1u);
    EXPECT_EQ((*out)[0].dims(), (std::vector<int64_t>{n, 3}));
    for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ((*out)[0].data<float>()[i], x.data<float>()[i]);
  }
}

// A graph output the caller released is written into the same buffer by the next run (no new
// allocation, zero-fill or page faults for large outputs); one the caller still holds is left
// alone. Both for the cpu backend's ops and for a fused group's output.
TEST(Session, ReusesReleasedOutputBuffersOnly) {
  for (const char* backend : {"cpu", "fusion"}) {
    auto g = std::make_unique<ir::Graph>();
    g->opsets[""] = 13;
    ir::TensorType t{ir::DType::kF32, ir::Shape::from_dims({1, 2, 4, 4})};
    ir::Value* x = g->add_value("x", t).value();
    ir::Value* y = g->add_value("y", t).value();
    ir::Value* z = g->add_value("z", t).value();
    g->inputs().push_back(x);
    g->outputs().push_back(z);
    g->add_node("Relu", "a", {x}, {y});
    g->add_node("Sigmoid", "b", {y}, {z});
    runtime::SessionOptions options;
    options.backend = backend;
    auto session = runtime::Session::create(std::move(g), options);
    ASSERT_TRUE(session.ok()) << session.status().to_string();
    ir::Tensor in = ir::Tensor::allocate(ir::DType::kF32, {1, 2, 4, 4});
    auto run = [&](float v) {
      for (int64_t i = 0; i < in.numel(); ++i) in.data<float>()[i] = v;
      auto out = (*session)->run({{"x", in}});
      EXPECT_TRUE(out.ok()) << out.status().to_string();
      return (*out)[0];
    };
    const void* first = run(1.0f).raw();  // released at once
    ir::Tensor held = run(2.0f);
    EXPECT_EQ(held.raw(), first) << backend << ": a released output buffer is reused";
    ir::Tensor next = run(-3.0f);
    EXPECT_NE(next.raw(), held.raw()) << backend << ": a held output is never overwritten";
    EXPECT_FLOAT_EQ(held.data<float>()[0], 1.0f / (1.0f + std::exp(-2.0f))) << backend;
    EXPECT_FLOAT_EQ(next.data<float>()[0], 0.5f) << backend;
  }
}

TEST(Session, ProfileRecordsEveryNodeOfEveryProfiledRun) {
  for (const char* backend : {"ref", "cpu"}) {
    runtime::SessionOptions options;
    options.backend = backend;
    options.optimize = false;  // keep the Identity nodes
    auto session = runtime::Session::create(identity_chain(), options);
    ASSERT_TRUE(session.ok()) << session.status().to_string();
    ir::Tensor x = ir::Tensor::allocate(ir::DType::kF32, {2, 3});
    backends::RunProfile profile;
    ASSERT_TRUE((*session)->run({{"x", x}}, &profile).ok());
    ASSERT_TRUE((*session)->run({{"x", x}}).ok());  // not profiled: adds nothing
    ASSERT_TRUE((*session)->run({{"x", x}}, &profile).ok());
    EXPECT_EQ(profile.runs, 2u) << backend;
    ASSERT_EQ(profile.nodes.size(), 4u) << backend;
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_EQ(profile.nodes[i].node->name, i % 2 == 0 ? "first" : "second") << backend;
      EXPECT_EQ(profile.nodes[i].backend, backend);
      EXPECT_GE(profile.nodes[i].us, 0.0);
    }
    // A failing run leaves the profile detached: the next unprofiled run records nothing.
    EXPECT_FALSE((*session)->run({{"x", ir::Tensor::allocate(ir::DType::kF32, {2, 4})}}, &profile).ok());
    ASSERT_TRUE((*session)->run({{"x", x}}).ok());
    EXPECT_EQ(profile.nodes.size(), 4u) << backend;
  }
}

TEST(Session, RejectsWrongDtypeAndShape) {
  auto session = runtime::Session::create(identity_chain(), {});
  ASSERT_TRUE(session.ok());
  auto bad_dtype = (*session)->run({{"x", ir::Tensor::allocate(ir::DType::kI32, {2, 3})}});
  ASSERT_FALSE(bad_dtype.ok());
  EXPECT_NE(bad_dtype.status().message().find("must be f32"), std::string::npos);
  auto bad_shape = (*session)->run({{"x", ir::Tensor::allocate(ir::DType::kF32, {2, 4})}});
  ASSERT_FALSE(bad_shape.ok());
  EXPECT_NE(bad_shape.status().message().find("must have shape"), std::string::npos);
  auto missing = (*session)->run({});
  ASSERT_FALSE(missing.ok());
  auto unknown = (*session)->run({{"nope", ir::Tensor::allocate(ir::DType::kF32, {2, 3})}});
  ASSERT_FALSE(unknown.ok());
}

TEST(Graph, TopoSortReportsCycle) {
  ir::Graph g;
  g.name = "cyclic";
  ir::Value* a = g.add_value("a").value();
  ir::Value* b = g.add_value("b").value();
  g.add_node("Identity", "n1", {a}, {b});
  g.add_node("Identity", "n2", {b}, {a});
  Status s = g.topo_sort();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cycle"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace nfuse
