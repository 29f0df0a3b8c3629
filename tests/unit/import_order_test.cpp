// Nodes listed out of topological order (FP16 converters append the Casts of the graph inputs
// after their readers) import in topological order and run as the sorted file does; a true cycle
// and a missing producer are errors that name the nodes and tensors truthfully.
#include <gtest/gtest.h>

#include <algorithm>

#include "frontend/onnx/onnx_importer.h"
#include "runtime/session.h"
#include "support/onnx_builder.h"

namespace nfuse {
namespace {

using frontend::onnx::load_model_from_bytes;
using testing::OnnxBuilder;
constexpr int kF32 = ::onnx::TensorProto::FLOAT;
constexpr int kBool = ::onnx::TensorProto::BOOL;

// x -> Relu (r) -> Mul(r, w) (m) -> Add(m, x) (y), and an If whose branches read `m` from the
// outer graph: z = If(c, then: m + w, else: m - w).
OnnxBuilder chain_with_if() {
  OnnxBuilder b;
  b.input("x", kF32, {4}).input("c", kBool, {}).output("y", kF32, {4}).output("z", kF32, {4});
  b.initializer("w", {4}, {1.0f, -2.0f, 3.0f, 0.5f});
  b.node("Relu", {"x"}, {"r"}, "relu");
  b.node("Mul", {"r", "w"}, {"m"}, "mul");
  b.node("Add", {"m", "x"}, {"y"}, "add");
  auto& iff = b.node("If", {"c"}, {"z"}, "if");
  for (bool then_branch : {true, false}) {
    ::onnx::GraphProto g;
    g.set_name(then_branch ? "then" : "else");
    auto* n = g.add_node();
    n->set_op_type(then_branch ? "Add" : "Sub");
    n->add_input("m");
    n->add_input("w");
    n->add_output(g.name() + "_out");
    auto* out = g.add_output();
    out->set_name(g.name() + "_out");
    auto* tt = out->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(kF32);
    tt->mutable_shape()->add_dim()->set_dim_value(4);
    auto* a = iff.add_attribute();
    a->set_name(then_branch ? "then_branch" : "else_branch");
    a->set_type(::onnx::AttributeProto::GRAPH);
    *a->mutable_g() = g;
  }
  return b;
}

// The model's nodes in the order given by `order` (indices into the file's node list).
std::string reordered(const OnnxBuilder& b, const std::vector<int>& order) {
  ::onnx::ModelProto m = b.model();
  ::onnx::GraphProto* g = m.mutable_graph();
  std::vector<::onnx::NodeProto> nodes(g->node().begin(), g->node().end());
  g->clear_node();
  for (int i : order) *g->add_node() = nodes[static_cast<size_t>(i)];
  return m.SerializeAsString();
}

std::vector<std::vector<float>> run(const std::string& bytes, bool cond) {
  auto g = load_model_from_bytes(bytes.data(), bytes.size(), ".");
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  if (!g.ok()) return {};
  auto session = runtime::Session::create(std::move(*g), {});
  EXPECT_TRUE(session.ok()) << session.status().to_string();
  if (!session.ok()) return {};
  ir::Tensor c = ir::Tensor::allocate(ir::DType::kBool, {});
  c.data<bool>()[0] = cond;
  auto out = (*session)->run({{"x", ir::Tensor::from_vector<float>({-1.0f, 2.0f, 0.5f, 4.0f}, {4})}, {"c", c}});
  EXPECT_TRUE(out.ok()) << out.status().to_string();
  if (!out.ok()) return {};
  std::vector<std::vector<float>> result;
  for (const ir::Tensor& t : *out) result.emplace_back(t.data<float>(), t.data<float>() + t.numel());
  return result;
}

TEST(ImportOrder, SortedFilesImportUnchangedAndWithoutANote) {
  const std::string bytes = chain_with_if().bytes();
  auto g = load_model_from_bytes(bytes.data(), bytes.size(), ".");
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_TRUE((*g)->import_notes.empty());
  std::vector<std::string> names;
  for (const auto& n : (*g)->nodes()) names.push_back(n->name);
  EXPECT_EQ(names, (std::vector<std::string>{"relu", "mul", "add", "if"}));
}

TEST(ImportOrder, EveryPermutationImportsAndRunsAsTheSortedFile) {
  const OnnxBuilder b = chain_with_if();
  const auto expected_then = run(b.bytes(), true), expected_else = run(b.bytes(), false);
  ASSERT_EQ(expected_then.size(), 2u);
  std::vector<int> order = {0, 1, 2, 3};
  int permutations = 0;
  do {
    const std::string bytes = reordered(b, order);
    auto g = load_model_from_bytes(bytes.data(), bytes.size(), ".");
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    const bool file_sorted = std::find(order.begin(), order.end(), 0) < std::find(order.begin(), order.end(), 1) &&
                             std::find(order.begin(), order.end(), 1) < std::find(order.begin(), order.end(), 2) &&
                             std::find(order.begin(), order.end(), 1) < std::find(order.begin(), order.end(), 3);
    EXPECT_EQ((*g)->import_notes.empty(), file_sorted);
    EXPECT_EQ(run(bytes, true), expected_then);
    EXPECT_EQ(run(bytes, false), expected_else);
    ++permutations;
  } while (std::next_permutation(order.begin(), order.end()));
  EXPECT_EQ(permutations, 24);
}

TEST(ImportOrder, TheNoteNamesANodeListedBeforeItsProducer) {
  // add, relu, mul, if: add reads m before mul (later in the file) produces it; the If reads m
  // from inside its branches, which counts too.
  const std::string bytes = reordered(chain_with_if(), {2, 0, 3, 1});
  auto g = load_model_from_bytes(bytes.data(), bytes.size(), ".");
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  ASSERT_EQ((*g)->import_notes.size(), 1u);
  const std::string& note = (*g)->import_notes[0];
  EXPECT_NE(note.find("not in topological order"), std::string::npos) << note;
  EXPECT_NE(note.find("'add' (Add) reads 'm', produced by 'mul' (Mul) later in the file"), std::string::npos) << note;
  std::vector<std::string> names;
  for (const auto& n : (*g)->nodes()) names.push_back(n->name);
  EXPECT_EQ(names, (std::vector<std::string>{"relu", "mul", "add", "if"}));
}

TEST(ImportOrder, ACycleIsAnErrorNamingItsNodesAndTensors) {
  OnnxBuilder b;
  b.input("x", kF32, {4}).output("y", kF32, {4});
  b.node("Add", {"x", "b"}, {"a"}, "first");
  b.node("Relu", {"a"}, {"b"}, "second");
  b.node("Neg", {"a"}, {"y"}, "out");
  const std::string bytes = b.bytes();
  auto g = load_model_from_bytes(bytes.data(), bytes.size(), ".");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidModel);
  const std::string m = g.status().message();
  EXPECT_NE(m.find("the nodes form a cycle"), std::string::npos) << m;
  EXPECT_NE(m.find("'first' (Add) reads 'b' from 'second' (Relu), which reads 'a' from 'first' (Add)"),
            std::string::npos)
      << m;

  OnnxBuilder self;
  self.input("x", kF32, {4}).output("y", kF32, {4});
  self.node("Add", {"x", "y"}, {"y"}, "loop");
  const std::string self_bytes = self.bytes();
  auto s = load_model_from_bytes(self_bytes.data(), self_bytes.size(), ".");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("'loop' (Add) reads 'y' from 'loop' (Add)"), std::string::npos)
      << s.status().message();
}

TEST(ImportOrder, AMissingProducerIsStillNamedAsMissing) {
  OnnxBuilder b;
  b.input("x", kF32, {4}).output("y", kF32, {4});
  b.node("Relu", {"x"}, {"r"}, "relu");
  b.node("Add", {"r", "nowhere"}, {"y"}, "add");
  const std::string bytes = b.bytes();
  auto g = load_model_from_bytes(bytes.data(), bytes.size(), ".");
  ASSERT_FALSE(g.ok());
  const std::string m = g.status().message();
  EXPECT_NE(m.find("input 1 'nowhere' is not a graph input, initializer or output of any node"), std::string::npos)
      << m;
}

}  // namespace
}  // namespace nfuse
