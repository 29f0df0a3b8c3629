// A backend added the way every backend is: one class in its own file and one registration line
// (NFUSE_REGISTER_BACKEND). Nothing else in the tree names it: the partitioner places nodes on it
// from its traits and its supports() answers, the plan compiles and runs its partitions, and the
// report says where each node ran. It runs Neg and Relu on f32 with kernels of its own and counts
// what it executed, so the test can tell that it ran, not only that it was planned.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "backends/backend.h"
#include "frontend/onnx/onnx_importer.h"
#include "runtime/session.h"
#include "support/onnx_builder.h"

namespace nfuse::plugin_test {
namespace {

std::atomic<int> g_nodes_run{0};

class NegReluPartition final : public backends::CompiledPartition {
 public:
  struct Step {
    const ir::Node* node;
    int in, out;
    bool preallocated;
  };
  explicit NegReluPartition(std::vector<Step> steps) : steps_(std::move(steps)) {}
  Status run(backends::ExecContext& ctx) override {
    for (const Step& s : steps_) {
      backends::ScopedNodeTimer timer(ctx.profile, s.node, "plugin", false);
      const ir::Tensor& x = ctx.slot(s.in);
      ir::Tensor& y = ctx.slot(s.out);
      if (!s.preallocated) {
        NFUSE_ASSIGN_OR_RETURN(y, ir::Tensor::try_allocate(ir::DType::kF32, x.dims()));
      }
      const bool neg = s.node->op_type == "Neg";
      for (int64_t i = 0; i < x.numel(); ++i) {
        const float v = x.data<float>()[i];
        y.data<float>()[i] = neg ? -v : (v > 0.0f ? v : 0.0f);
      }
      ++g_nodes_run;
    }
    return ok_status();
  }

 private:
  std::vector<Step> steps_;
};

class NegReluBackend final : public backends::Backend {
 public:
  std::string_view name() const override { return "plugin"; }
  backends::BackendTraits traits() const override { return {}; }  // not in `auto`'s default order
  backends::Support supports(const ir::Node& node, const backends::PlanView& plan) const override {
    using backends::SupportReason;
    if (node.op_type != "Neg" && node.op_type != "Relu")
      return backends::Support::no(SupportReason::kUnsupportedOp, "no " + node.op_type + " unit");
    if (!node.inputs[0] || plan.type(node.inputs[0]).dtype != ir::DType::kF32)
      return backends::Support::no(SupportReason::kDtype, "f32 only");
    return backends::Support::native();
  }
  Result<std::unique_ptr<backends::CompiledPartition>> compile(const backends::Partition& partition,
                                                               const backends::CompileContext& ctx) override {
    std::vector<NegReluPartition::Step> steps;
    for (const ir::Node* n : partition.nodes) {
      const ir::Value* y = n->outputs[0];
      steps.push_back({n, ctx.slot_of(n->inputs[0]), ctx.slot_of(y), ctx.is_preallocated(y)});
    }
    return std::unique_ptr<backends::CompiledPartition>(new NegReluPartition(std::move(steps)));
  }
};

std::unique_ptr<backends::Backend> make_plugin() { return std::make_unique<NegReluBackend>(); }
NFUSE_REGISTER_BACKEND("plugin", make_plugin);

// relu(neg(x)) -> sigmoid -> neg: the plugin takes three of four nodes; Sigmoid falls back.
std::unique_ptr<runtime::Session> open(const std::string& backend, std::vector<std::string> prefer) {
  testing::OnnxBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {2, 5});
  b.node("Neg", {"x"}, {"a"}, "neg1");
  b.node("Relu", {"a"}, {"r"}, "relu");
  b.node("Sigmoid", {"r"}, {"s"}, "sigmoid");
  b.node("Neg", {"s"}, {"y"}, "neg2");
  b.output("y", onnx::TensorProto::FLOAT, {2, 5});
  const std::string bytes = b.bytes();
  auto g = frontend::onnx::load_model_from_bytes(bytes.data(), bytes.size(), ".");
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  runtime::SessionOptions o;
  o.backend = backend;
  o.partition.prefer = std::move(prefer);
  o.optimize = false;
  auto s = runtime::Session::create(std::move(*g), o);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return std::move(*s);
}

void expect_runs_and_matches(runtime::Session& s, int plugin_nodes) {
  ir::Tensor x = ir::Tensor::allocate(ir::DType::kF32, {2, 5});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i) - 4.5f;
  const int before = g_nodes_run;
  auto y = s.run({{"x", x}});
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ(g_nodes_run - before, plugin_nodes);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float v = x.data<float>()[i];
    const float want = -1.0f / (1.0f + std::exp(-std::max(0.0f, -v)));
    EXPECT_NEAR((*y)[0].data<float>()[i], want, 1e-6f) << i;
  }
}

// Where each node runs and the reason kind of each, from the session's placement report.
std::map<std::string, std::pair<std::string, std::string>> placements(runtime::Session& s) {
  auto report = s.placement_report_json(s.default_input_dims(), "plugin_chain");
  EXPECT_TRUE(report.ok()) << report.status().to_string();
  std::map<std::string, std::pair<std::string, std::string>> where;
  if (!report.ok()) return where;
  const nlohmann::json j = nlohmann::json::parse(*report);  // outlives the loop over its nodes
  for (const auto& n : j.at("nodes"))
    where[n.at("name").get<std::string>()] = {n.at("backend").get<std::string>(),
                                              n.at("reason_kind").get<std::string>()};
  return where;
}

// Named alone, it is the first preferred backend: it takes what it supports and the rest goes to
// the general fallback, which the partitioner found by its traits, not its name.
TEST(PluginBackend, NamedItRunsWhatItSupportsAndTheRestFallsBack) {
  auto s = open("plugin", {});
  auto where = placements(*s);
  EXPECT_EQ(where["neg1"].first, "plugin");
  EXPECT_EQ(where["relu"].first, "plugin");
  EXPECT_EQ(where["sigmoid"].first, "cpu");
  EXPECT_EQ(where["sigmoid"].second, "unsupported op");
  EXPECT_EQ(where["neg2"].first, "plugin");
  expect_runs_and_matches(*s, 3);
}

// Under `auto` the cost passes judge it like any backend: a node it could run either runs there
// or is moved to the fallback with reason "cost"; what runs on it is what the report says.
TEST(PluginBackend, UnderAutoTheCostModelJudgesIt) {
  auto s = open("auto", {"plugin", "cpu"});
  auto where = placements(*s);
  int on_plugin = 0;
  for (const char* n : {"neg1", "relu", "neg2"}) {
    if (where[n].first == "plugin")
      ++on_plugin;
    else
      EXPECT_EQ(where[n].second, "cost") << n;
  }
  EXPECT_EQ(where["sigmoid"].first, "cpu");
  expect_runs_and_matches(*s, on_plugin);
}

TEST(PluginBackend, NotInAutoByDefault) {
  auto s = open("auto", {});
  expect_runs_and_matches(*s, 0);
}

}  // namespace
}  // namespace nfuse::plugin_test
