// fuse_matmul_bias: MatMul(X, W) + b -> MatMul [nfuse.bias], then a residual Add and an
// activation on top of it; outputs compared before and after on ref, and the fused graph on cpu.
#include "passes/fuse_matmul_bias.h"
#include "backends/ref/interpreter.h"

#include "ops/fused_epilogue.h"
#include "passes/fuse_activation.h"
#include "passes/fuse_residual_add.h"
#include "pass_test_util.h"

namespace nfuse::passes_test {
namespace {

// x [2,5,K] -> MatMul(W [K,N]) -> y; Add(y, b) -> s [-> Add(s, r) -> t] [-> Relu -> z]
OnnxBuilder linear(int64_t k, int64_t n, std::vector<int64_t> bias_dims, bool swap, bool residual, bool relu) {
  OnnxBuilder b;
  b.input("x", kF, {2, 5, k});
  random_initializer(b, "w", {k, n}, 1);
  random_initializer(b, "b", bias_dims, 2);
  b.node("MatMul", {"x", "w"}, {"y"}, "mm1");
  b.node("Add", swap ? std::vector<std::string>{"b", "y"} : std::vector<std::string>{"y", "b"}, {"s"}, "add1");
  std::string last = "s";
  if (residual) {
    b.input("r", kF, {2, 5, n});
    b.node("Add", {"r", last}, {"t"}, "add2");
    last = "t";
  }
  if (relu) {
    b.node("Relu", {last}, {"z"}, "relu1");
    last = "z";
  }
  out(b, last);
  return b;
}

Status all_three(ir::Graph& g, PassLog& log) {
  NFUSE_RETURN_IF_ERROR_PLAIN(fuse_matmul_bias(g, log));
  NFUSE_RETURN_IF_ERROR_PLAIN(fuse_residual_add(g, log));
  return fuse_activation(g, log);
}

// The rewritten graph on the cpu backend against the original on the ref interpreter.
void expect_cpu_matches(const OnnxBuilder& b, const std::string& what) {
  auto before = load(b);
  auto after = load(b);
  ASSERT_TRUE(before && after);
  PassLog log;
  ASSERT_TRUE(all_three(*after, log).ok());
  const std::vector<ir::Tensor> inputs = random_inputs(*before, kSeed);
  auto expected = backends::ref::interpret_graph(*before, inputs);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  runtime::NamedTensors named;
  for (size_t i = 0; i < inputs.size(); ++i) named.push_back({after->inputs()[i]->name, inputs[i]});
  runtime::SessionOptions options;
  options.backend = "cpu";
  options.optimize = false;
  auto session = runtime::Session::create(std::move(after), options);
  ASSERT_TRUE(session.ok()) << session.status().to_string();
  auto got = (*session)->run(named);
  ASSERT_TRUE(got.ok()) << what << ": " << got.status().to_string();
  ASSERT_EQ(got->size(), expected->size());
  for (size_t o = 0; o < got->size(); ++o) {
    ASSERT_EQ((*got)[o].dims(), (*expected)[o].dims()) << what;
    for (int64_t i = 0; i < (*got)[o].numel(); ++i) {
      const double a = (*got)[o].get_double(i), e = (*expected)[o].get_double(i);
      ASSERT_LE(std::fabs(a - e), 1e-4 * (std::fabs(e) + 1.0)) << what << ": flat index " << i;
    }
  }
}

TEST(FuseMatMulBias, FusesBiasThenResidualThenActivation) {
  for (bool swap : {false, true}) {
    std::unique_ptr<ir::Graph> after;
    auto lines = check_pass(linear(7, 17, {17}, swap, true, true), all_three, "bias_residual_relu", &after);
    ASSERT_TRUE(after);
    ASSERT_EQ(after->nodes().size(), 1u);
    const ir::Node& mm = *after->nodes()[0];
    EXPECT_EQ(mm.op_type, "MatMul");
    EXPECT_EQ(mm.attrs.get_int(ops::kFusedBiasAttr, 0), 1);
    EXPECT_EQ(mm.attrs.get_int(ops::kFusedResidualAttr, 0), 1);
    ASSERT_EQ(mm.implicit_inputs.size(), 2u);
    EXPECT_EQ(mm.implicit_inputs[0]->name, "r");  // the residual stays implicit input 0
    EXPECT_EQ(mm.implicit_inputs[1]->name, "b");
    EXPECT_EQ(mm.attrs.get_string(ops::kFusedActivationAttr, ""), "Relu");
    EXPECT_EQ(mm.output(0)->name, "z");
    ASSERT_EQ(lines.size(), 3u);
    EXPECT_EQ(lines[0], "fused Add 'add1' into MatMul 'mm1' as bias 'b'");
    auto read = ops::read_fused_epilogue(mm);
    ASSERT_TRUE(read.ok());
    EXPECT_EQ(read->bias->name, "b");
    EXPECT_EQ(read->residual->name, "r");
    check_pass(linear(7, 17, {17}, swap, true, true), all_three, "bias_residual_relu");  // and on a Session
    expect_cpu_matches(linear(7, 17, {17}, swap, true, true), "cpu bias_residual_relu");
  }
  for (int64_t n : {1, 3, 33, 1000}) {  // bias alone, [1, N] and [1, 1, N] shaped
    for (const std::vector<int64_t>& bd : {std::vector<int64_t>{n}, {1, n}, {1, 1, n}}) {
      const std::string what = "bias n " + std::to_string(n) + " rank " + std::to_string(bd.size());
      auto lines = check_pass(linear(5, n, bd, false, false, false), fuse_matmul_bias, what);
      EXPECT_EQ(lines.size(), 1u) << what;
      expect_cpu_matches(linear(5, n, bd, false, false, false), "cpu " + what);
      expect_cpu_matches(linear(5, n, bd, true, false, true), "cpu relu " + what);
    }
  }
}

TEST(FuseMatMulBias, LeavesOtherAddsAlone) {
  {  // the Add broadcasts along another axis: not a bias
    OnnxBuilder b = linear(4, 6, {5, 1}, false, false, false);
    EXPECT_TRUE(check_pass(b, fuse_matmul_bias, "column_bias").empty());
  }
  {  // a full-shape constant: a residual-like add, not a bias
    OnnxBuilder b = linear(4, 6, {2, 5, 6}, false, false, false);
    EXPECT_TRUE(check_pass(b, fuse_matmul_bias, "full_constant").empty());
  }
  {  // the bias would broadcast y to a higher rank
    OnnxBuilder b = linear(4, 6, {1, 1, 1, 6}, false, false, false);
    EXPECT_TRUE(check_pass(b, fuse_matmul_bias, "rank_growing").empty());
  }
  {  // W is a run-time tensor
    OnnxBuilder b;
    b.input("x", kF, {3, 4});
    b.input("w", kF, {4, 6});
    random_initializer(b, "b", {6}, 2);
    b.node("MatMul", {"x", "w"}, {"y"}, "mm1");
    b.node("Add", {"y", "b"}, {"s"}, "add1");
    out(b, "s");
    EXPECT_TRUE(check_pass(b, fuse_matmul_bias, "runtime_w").empty());
  }
  {  // the MatMul output has another consumer
    OnnxBuilder b = linear(4, 6, {6}, false, false, false);
    b.node("Relu", {"y"}, {"q"}, "other");
    out(b, "q");
    EXPECT_TRUE(check_pass(b, fuse_matmul_bias, "two_consumers").empty());
  }
}

TEST(FuseMatMulBias, MalformedAttributesAreRejected) {
  auto g = load(linear(4, 6, {6}, false, false, false));
  ASSERT_TRUE(g);
  ir::Node* mm = nullptr;
  for (const auto& n : g->nodes())
    if (n->op_type == "MatMul") mm = n.get();
  ASSERT_TRUE(mm);
  mm->attrs.set(ops::kFusedBiasAttr, int64_t{1});  // no implicit input
  EXPECT_FALSE(ops::read_fused_epilogue(*mm).ok());
}

}  // namespace
}  // namespace nfuse::passes_test
