// What `nfuse inspect` counts: parameters of every dtype (uint8 weights of a dynamically
// quantized conv too), MACs of integer and quantized MAC ops and inside If / Loop bodies.
#include <gtest/gtest.h>

#include <map>

#include "compile/plan_stats.h"
#include "frontend/onnx/onnx_importer.h"
#include "support/onnx_builder.h"

namespace nfuse {
namespace {

using testing::OnnxBuilder;
constexpr int kF32 = ::onnx::TensorProto::FLOAT;
constexpr int kU8 = ::onnx::TensorProto::UINT8;
constexpr int kI64 = ::onnx::TensorProto::INT64;
constexpr int kBool = ::onnx::TensorProto::BOOL;

void add_u8_initializer(OnnxBuilder& b, const std::string& name, std::vector<int64_t> dims) {
  auto* t = b.model().mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(kU8);
  int64_t n = 1;
  for (int64_t d : dims) t->add_dims(d), n *= d;
  t->set_raw_data(std::string(static_cast<size_t>(n), '\x07'));
}

compile::PlanStats stats_of(const OnnxBuilder& b) {
  const std::string bytes = b.bytes();
  auto g = frontend::onnx::load_model_from_bytes(bytes.data(), bytes.size(), ".");
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  if (!g.ok()) return {};
  std::map<std::string, std::vector<int64_t>> dims;
  for (const ir::Value* in : (*g)->inputs()) dims[in->name] = *in->type.shape.static_dims();
  auto plan = compile::build_plan(**g, dims, compile::PlanOptions{});
  EXPECT_TRUE(plan.ok()) << plan.status().to_string();
  if (!plan.ok()) return {};
  return compile::compute_stats(**g, **plan);
}

// A graph output of `elem` type and `dims`, for a subgraph.
void add_output(::onnx::GraphProto& g, const std::string& name, int elem, std::vector<int64_t> dims) {
  auto* out = g.add_output();
  out->set_name(name);
  auto* tt = out->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
}

TEST(PlanStats, ParametersOfEveryDtypeAndIntegerConvMacs) {
  OnnxBuilder b;
  b.input("x", kU8, {1, 8, 10, 10});
  add_u8_initializer(b, "w", {16, 8, 3, 3});
  add_u8_initializer(b, "wz", {});
  add_u8_initializer(b, "xz", {});
  b.node("ConvInteger", {"x", "w", "xz", "wz"}, {"y"}, "conv");
  auto* out = b.model().mutable_graph()->add_output();
  out->set_name("y");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::INT32);
  const compile::PlanStats s = stats_of(b);
  EXPECT_EQ(s.parameters, 16 * 8 * 9 + 2);
  EXPECT_EQ(s.parameter_bytes, 16 * 8 * 9 + 2);
  ASSERT_EQ(s.parameters_by_dtype.count("u8"), 1u) << "dtype names: " << s.parameters_by_dtype.begin()->first;
  EXPECT_EQ(s.parameters_by_dtype.at("u8").elements, 16 * 8 * 9 + 2);
  EXPECT_EQ(s.macs, int64_t{16} * 8 * 8 * 8 * 9);  // 8x8 outputs (no padding), 8 x 3 x 3 each
  EXPECT_FALSE(s.macs_lower_bound);
}

TEST(PlanStats, MacsInsideIfCountTheLargerBranchAndLoopsTheirTripCount) {
  OnnxBuilder b;
  b.input("x", kF32, {2, 6}).input("c", kBool, {});
  b.initializer("w_small", {6, 6}, std::vector<float>(36, 0.5f));
  b.initializer("w_big", {6, 24}, std::vector<float>(144, 0.25f));
  auto& iff = b.node("If", {"c"}, {"z"}, "if");
  for (bool then_branch : {true, false}) {
    ::onnx::GraphProto g;
    g.set_name(then_branch ? "then" : "else");
    auto* n = g.add_node();
    n->set_op_type("MatMul");
    n->add_input("x");
    n->add_input(then_branch ? "w_small" : "w_big");
    n->add_output(g.name() + "_out");
    add_output(g, g.name() + "_out", kF32, {});
    auto* a = iff.add_attribute();
    a->set_name(then_branch ? "then_branch" : "else_branch");
    a->set_type(::onnx::AttributeProto::GRAPH);
    *a->mutable_g() = g;
  }
  // Loop 5 times: acc = acc x w_small (a [2,6] x [6,6] MatMul per iteration).
  auto* trips = b.model().mutable_graph()->add_initializer();
  trips->set_name("trips");
  trips->set_data_type(kI64);
  trips->add_int64_data(5);
  auto* keep_going = b.model().mutable_graph()->add_initializer();
  keep_going->set_name("keep_going");
  keep_going->set_data_type(kBool);
  keep_going->add_int32_data(1);
  auto& loop = b.node("Loop", {"trips", "keep_going", "x"}, {"acc"}, "loop");
  ::onnx::GraphProto body;
  body.set_name("body");
  for (auto [name, elem] : {std::pair<const char*, int>{"i", kI64}, {"cond_in", kBool}, {"acc_in", kF32}}) {
    auto* in = body.add_input();
    in->set_name(name);
    in->mutable_type()->mutable_tensor_type()->set_elem_type(elem);
    if (elem == kF32) {
      in->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(2);
      in->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(6);
    } else {
      in->mutable_type()->mutable_tensor_type()->mutable_shape();
    }
  }
  auto* id = body.add_node();
  id->set_op_type("Identity");
  id->add_input("cond_in");
  id->add_output("cond_out");
  auto* mm = body.add_node();
  mm->set_op_type("MatMul");
  mm->add_input("acc_in");
  mm->add_input("w_small");
  mm->add_output("acc_out");
  add_output(body, "cond_out", kBool, {});
  add_output(body, "acc_out", kF32, {2, 6});
  auto* a = loop.add_attribute();
  a->set_name("body");
  a->set_type(::onnx::AttributeProto::GRAPH);
  *a->mutable_g() = body;
  for (const char* name : {"z", "acc"}) {
    auto* out = b.model().mutable_graph()->add_output();
    out->set_name(name);
    out->mutable_type()->mutable_tensor_type()->set_elem_type(kF32);
  }
  const compile::PlanStats s = stats_of(b);
  const int64_t if_macs = 2 * 24 * 6;       // the else branch: [2,6] x [6,24]
  const int64_t loop_macs = 5 * 2 * 6 * 6;  // five [2,6] x [6,6]
  EXPECT_EQ(s.macs, if_macs + loop_macs);
  EXPECT_FALSE(s.macs_lower_bound);
  EXPECT_EQ(s.parameters_by_dtype.at("f32").elements, 36 + 144);
  EXPECT_EQ(s.parameters_by_dtype.at("i64").elements, 1);
  EXPECT_EQ(s.parameters_by_dtype.at("bool").elements, 1);
}

}  // namespace
}  // namespace nfuse
