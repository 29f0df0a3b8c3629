// Control-flow bodies compiled on the session's backends (runtime/compiled_subgraphs.h): an If
// whose branch changes between runs, a Loop with carried state and a scan output, a Loop whose
// carried value grows every iteration (past the per-body plan limit), a Scan, and an If inside a
// Loop body reading a value of the main graph. Every run is compared with the reference
// interpreter on the graph as imported, and the profile must show the bodies' nodes on the cpu
// backend's own kernels.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pass_test_util.h"
#include "runtime/compiled_subgraphs.h"

namespace nfuse::passes_test {
namespace {

constexpr int kBool = ::onnx::TensorProto::BOOL;
constexpr int kI64 = ::onnx::TensorProto::INT64;

// A subgraph under construction: nodes, its inputs and outputs (types optional, as exporters
// often leave a body's types to the owner).
class Body {
 public:
  explicit Body(std::string name) { g_.set_name(std::move(name)); }
  ::onnx::NodeProto& node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out) {
    auto* n = g_.add_node();
    n->set_op_type(op);
    n->set_name(op + "_" + out.front());
    for (const std::string& i : in) n->add_input(i);
    for (const std::string& o : out) n->add_output(o);
    return *n;
  }
  Body& input(const std::string& name, int elem, std::vector<int64_t> dims) {
    typed(g_.add_input(), name, elem, &dims);
    return *this;
  }
  Body& input(const std::string& name) {  // untyped: the owner says
    g_.add_input()->set_name(name);
    return *this;
  }
  Body& output(const std::string& name, int elem = kF) {
    typed(g_.add_output(), name, elem, nullptr);
    return *this;
  }
  void attach(::onnx::NodeProto& owner, const std::string& attr) const {
    auto* a = owner.add_attribute();
    a->set_name(attr);
    a->set_type(::onnx::AttributeProto::GRAPH);
    *a->mutable_g() = g_;
  }

 private:
  static void typed(::onnx::ValueInfoProto* vi, const std::string& name, int elem, const std::vector<int64_t>* dims) {
    vi->set_name(name);
    auto* t = vi->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem);
    if (!dims) return;
    auto* shape = t->mutable_shape();
    for (int64_t d : *dims) shape->add_dim()->set_dim_value(d);
  }
  ::onnx::GraphProto g_;
};

ir::Tensor random_tensor(const std::vector<int64_t>& dims, uint32_t seed) {
  ir::Tensor t = ir::Tensor::allocate(ir::DType::kF32, dims);
  const std::vector<float> v = random_values(t.numel(), seed, -1.0f, 1.0f);
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

// The model on a cpu session and on the reference interpreter, run after run with the same
// inputs; fails on any mismatch. Returns the session for the caller's checks.
class Compared {
 public:
  explicit Compared(const OnnxBuilder& b, int threads = 1) {
    reference_ = load(b);
    auto g = load(b);
    if (!reference_ || !g) return;
    runtime::SessionOptions o;
    o.backend = "cpu";
    o.threads = threads;
    auto s = runtime::Session::create(std::move(g), o);
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    if (s.ok()) session_ = std::move(*s);
  }
  runtime::Session* session() const { return session_.get(); }

  void run(const runtime::NamedTensors& inputs, const std::string& what, backends::RunProfile* profile = nullptr) {
    ASSERT_TRUE(session_) << what;
    std::vector<ir::Tensor> ordered;
    for (const ir::Value* in : reference_->inputs()) {
      for (const auto& [name, t] : inputs)
        if (name == in->name) ordered.push_back(t);
    }
    auto expected = backends::ref::interpret_graph(*reference_, ordered);
    ASSERT_TRUE(expected.ok()) << what << ": " << expected.status().to_string();
    auto got = session_->run(inputs, profile);
    ASSERT_TRUE(got.ok()) << what << ": " << got.status().to_string();
    expect_close(*expected, *got, what);
  }

 private:
  std::unique_ptr<ir::Graph> reference_;
  std::unique_ptr<runtime::Session> session_;
};

// Timed entries of `op` in the profile: their count, and how many ran on reference kernels.
struct OpEntries {
  int count = 0;
  int reference = 0;
};
OpEntries entries(const backends::RunProfile& p, const std::string& op) {
  OpEntries e;
  for (const auto& t : p.nodes) {
    if (t.node->op_type != op) continue;
    ++e.count;
    e.reference += t.reference;
  }
  return e;
}

// y = If(cond) then relu(conv(x, w)) + bias else x * 2.
OnnxBuilder if_model() {
  OnnxBuilder b;
  b.input("x", kF, {1, 8, 12, 12}).input("cond", kBool, {});
  random_initializer(b, "w", {8, 8, 3, 3}, 21);
  random_initializer(b, "bias", {1, 8, 1, 1}, 22);
  b.initializer("two", {}, {2.0f});
  auto& iff = b.node("If", {"cond"}, {"y"}, "wrapper");
  Body then_branch("then");
  set_ints_attr(then_branch.node("Conv", {"x", "w"}, {"c"}), "pads", {1, 1, 1, 1});
  then_branch.node("Relu", {"c"}, {"r"});
  then_branch.node("Add", {"r", "bias"}, {"then_out"});
  then_branch.output("then_out").attach(iff, "then_branch");
  Body else_branch("else");
  else_branch.node("Mul", {"x", "two"}, {"else_out"});
  else_branch.output("else_out").attach(iff, "else_branch");
  out(b, "y");
  return b;
}

TEST(CompiledControlFlow, AnIfSwitchesBranchesBetweenRunsOnCpuKernels) {
  Compared c(if_model());
  ASSERT_TRUE(c.session());
  const ir::Tensor x = random_tensor({1, 8, 12, 12}, 5);
  backends::RunProfile profile;
  for (bool cond : {true, false, true, false}) {
    c.run({{"x", x}, {"cond", ir::Tensor::from_vector<bool>({cond}, {})}}, cond ? "then" : "else", &profile);
  }
  EXPECT_EQ(profile.runs, 4u);  // the bodies' runs are not counted as the model's
  const OpEntries conv = entries(profile, "Conv"), mul = entries(profile, "Mul"), iff = entries(profile, "If");
  EXPECT_EQ(conv.count, 2);
  EXPECT_EQ(mul.count, 2);
  EXPECT_EQ(iff.count, 4);
  EXPECT_EQ(conv.reference + mul.reference + iff.reference, 0) << "a body node or the If ran on a reference kernel";
  for (const auto& t : profile.nodes) {
    EXPECT_FALSE(t.reference) << t.node->label() << " ran on its reference kernel";
    EXPECT_EQ(t.backend, "cpu") << t.node->label();
    EXPECT_GE(t.us, 0.0) << t.node->label();
  }
  auto plan = c.session()->prepare(c.session()->default_input_dims());
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  const auto stats = compile::compute_stats(c.session()->graph(), **plan);
  EXPECT_TRUE(stats.reference_nodes.empty()) << stats.reference_nodes.front();
}

TEST(CompiledControlFlow, TwoThreadsGiveTheSameResults) {
  Compared c(if_model(), 2);
  const ir::Tensor x = random_tensor({1, 8, 12, 12}, 6);
  for (bool cond : {false, true}) c.run({{"x", x}, {"cond", ir::Tensor::from_vector<bool>({cond}, {})}}, "2 threads");
}

// h' = tanh(h W + b) for M iterations (M an input), the final h and every h' stacked; the body's
// inputs are untyped, as PyTorch's exporter writes them.
OnnxBuilder rnn_loop_model() {
  OnnxBuilder b;
  b.input("trips", kI64, {}).input("h0", kF, {1, 16});
  random_initializer(b, "W", {16, 16}, 31, -0.5f, 0.5f);
  random_initializer(b, "bias", {16}, 32);
  auto* t = b.model().mutable_graph()->add_initializer();
  t->set_name("keep_going");
  t->set_data_type(kBool);
  t->add_int32_data(1);
  auto& loop = b.node("Loop", {"trips", "keep_going", "h0"}, {"h_final", "h_all"}, "rnn");
  Body body("cell");
  body.input("iter", kI64, {}).input("cond_in", kBool, {}).input("h");
  body.node("MatMul", {"h", "W"}, {"hw"});
  body.node("Add", {"hw", "bias"}, {"pre"});
  body.node("Tanh", {"pre"}, {"h_next"});
  body.node("Identity", {"cond_in"}, {"cond_out"});
  body.node("Identity", {"h_next"}, {"h_scan"});
  body.output("cond_out", kBool).output("h_next").output("h_scan").attach(loop, "body");
  out(b, "h_final");
  out(b, "h_all");
  return b;
}

TEST(CompiledControlFlow, ALoopCarriesItsStateThroughCompiledIterations) {
  Compared c(rnn_loop_model());
  ASSERT_TRUE(c.session());
  const ir::Tensor h0 = random_tensor({1, 16}, 7);
  backends::RunProfile profile;
  for (int64_t trips : {3, 5, 0, 1}) {
    c.run({{"trips", ir::Tensor::from_vector<int64_t>({trips}, {})}, {"h0", h0}}, std::to_string(trips) + " trips",
          &profile);
  }
  const OpEntries matmul = entries(profile, "MatMul"), tanh = entries(profile, "Tanh");
  EXPECT_EQ(matmul.count, 9);  // 3 + 5 + 0 + 1 iterations
  EXPECT_EQ(matmul.reference + tanh.reference, 0);
}

// c' = Concat(c, c0 + iter): the carried value grows by one column per iteration, so every
// iteration has a new shape signature.
OnnxBuilder growing_loop_model() {
  OnnxBuilder b;
  b.input("trips", kI64, {}).input("c0", kF, {2, 1});
  auto& loop = b.node("Loop", {"trips", "", "c0"}, {"c_final"}, "grow");
  Body body("grow_body");
  body.input("iter", kI64, {}).input("cond_in", kBool, {}).input("c");
  body.node("Cast", {"iter"}, {"iter_f"}).add_attribute()->CopyFrom([] {
    ::onnx::AttributeProto a;
    a.set_name("to");
    a.set_type(::onnx::AttributeProto::INT);
    a.set_i(::onnx::TensorProto::FLOAT);
    return a;
  }());
  body.node("Add", {"c0", "iter_f"}, {"shifted"});
  body.node("Concat", {"c", "shifted"}, {"c_next"}).add_attribute()->CopyFrom([] {
    ::onnx::AttributeProto a;
    a.set_name("axis");
    a.set_type(::onnx::AttributeProto::INT);
    a.set_i(1);
    return a;
  }());
  body.node("Identity", {"cond_in"}, {"cond_out"});
  body.output("cond_out", kBool).output("c_next").attach(loop, "body");
  out(b, "c_final");
  return b;
}

TEST(CompiledControlFlow, ALoopWhoseStateGrowsPlansPastThePerBodyLimit) {
  Compared c(growing_loop_model());
  const ir::Tensor c0 = random_tensor({2, 1}, 8);
  // 1 + k columns after k iterations: a run of 40 passes kMaxPlansPerBody twice; the next runs
  // plan again from what is left.
  static_assert(runtime::CompiledSubgraphs::kMaxPlansPerBody < 40);
  for (int64_t trips : {40, 7, 40}) {
    c.run({{"trips", ir::Tensor::from_vector<int64_t>({trips}, {})}, {"c0", c0}}, std::to_string(trips) + " trips");
  }
}

// A Scan over the rows of x: s' = (s + x_t) * 0.5, scan output s'.
OnnxBuilder scan_model() {
  OnnxBuilder b(16);
  b.input("s0", kF, {6}).input("xs", kF, {9, 6});
  b.initializer("half", {}, {0.5f});
  auto& scan = b.node("Scan", {"s0", "xs"}, {"s_final", "s_all"}, "average");
  set_int_attr(scan, "num_scan_inputs", 1);
  Body body("average_body");
  body.input("s", kF, {6}).input("x_t", kF, {6});
  body.node("Add", {"s", "x_t"}, {"sum"});
  body.node("Mul", {"sum", "half"}, {"s_next"});
  body.node("Identity", {"s_next"}, {"s_out"});
  body.output("s_next").output("s_out").attach(scan, "body");
  out(b, "s_final");
  out(b, "s_all");
  return b;
}

TEST(CompiledControlFlow, AScanMatchesTheInterpreter) {
  Compared c(scan_model());
  backends::RunProfile profile;
  c.run({{"s0", random_tensor({6}, 9)}, {"xs", random_tensor({9, 6}, 10)}}, "scan", &profile);
  EXPECT_EQ(entries(profile, "Add").count, 9);
  EXPECT_EQ(entries(profile, "Add").reference, 0);
}

// A Loop whose body holds an If on (iter is even) that reads the main graph's `scale`: the
// branch switches inside one run, and the If's branches are bodies of a compiled body.
OnnxBuilder nested_model() {
  OnnxBuilder b;
  b.input("trips", kI64, {}).input("v0", kF, {1, 8}).input("scale", kF, {1, 8});
  auto* two = b.model().mutable_graph()->add_initializer();
  two->set_name("two_i");
  two->set_data_type(kI64);
  two->add_int64_data(2);
  auto* zero = b.model().mutable_graph()->add_initializer();
  zero->set_name("zero_i");
  zero->set_data_type(kI64);
  zero->add_int64_data(0);
  auto& loop = b.node("Loop", {"trips", "", "v0"}, {"v_final"}, "outer_loop");
  Body body("loop_body");
  body.input("iter", kI64, {}).input("cond_in", kBool, {}).input("v");
  body.node("Mod", {"iter", "two_i"}, {"parity"});
  body.node("Equal", {"parity", "zero_i"}, {"even"});
  auto& iff = body.node("If", {"even"}, {"v_next"});
  Body then_branch("even_step");
  then_branch.node("Mul", {"v", "scale"}, {"scaled"});
  then_branch.output("scaled").attach(iff, "then_branch");
  Body else_branch("odd_step");
  else_branch.node("Sigmoid", {"v"}, {"squashed"});
  else_branch.output("squashed").attach(iff, "else_branch");
  body.node("Identity", {"cond_in"}, {"cond_out"});
  body.output("cond_out", kBool).output("v_next").attach(loop, "body");
  out(b, "v_final");
  return b;
}

TEST(CompiledControlFlow, AnIfInsideALoopBodyReadsTheMainGraph) {
  Compared c(nested_model());
  backends::RunProfile profile;
  c.run({{"trips", ir::Tensor::from_vector<int64_t>({5}, {})},
         {"v0", random_tensor({1, 8}, 11)},
         {"scale", random_tensor({1, 8}, 12)}},
        "nested", &profile);
  EXPECT_EQ(entries(profile, "Mul").count, 3);      // iterations 0, 2, 4
  EXPECT_EQ(entries(profile, "Sigmoid").count, 2);  // iterations 1, 3
  EXPECT_EQ(entries(profile, "If").count, 5);
  EXPECT_EQ(entries(profile, "Loop").count, 1);
  EXPECT_EQ(entries(profile, "Mul").reference + entries(profile, "Sigmoid").reference, 0);
}

TEST(CompiledControlFlow, ABodyThatFailsNamesItsOwner) {
  // A Loop body whose carried value changes dtype (f32 in, i64 out): the compiled body runs,
  // the Loop names what is wrong instead of crashing.
  OnnxBuilder b;
  b.input("trips", kI64, {}).input("x0", kF, {2});
  auto& loop = b.node("Loop", {"trips", "", "x0"}, {"x_final"}, "bad_loop");
  Body body("bad_body");
  body.input("iter", kI64, {}).input("cond_in", kBool, {}).input("x");
  body.node("Identity", {"cond_in"}, {"cond_out"});
  body.node("Identity", {"iter"}, {"x_next"});
  body.output("cond_out", kBool).output("x_next", kI64).attach(loop, "body");
  out(b, "x_final");
  // Whichever stage sees it first (import, optimization or the run) must say so and name the Loop.
  const std::string bytes = b.bytes();
  Status failure;
  auto g = frontend::onnx::load_model_from_bytes(bytes.data(), bytes.size(), ".");
  if (!g.ok()) {
    failure = g.status();
  } else {
    runtime::SessionOptions o;
    o.backend = "cpu";
    auto s = runtime::Session::create(std::move(*g), o);
    if (!s.ok()) {
      failure = s.status();
    } else {
      auto r = (*s)->run({{"trips", ir::Tensor::from_vector<int64_t>({2}, {})}, {"x0", random_tensor({2}, 13)}});
      if (!r.ok()) failure = r.status();
    }
  }
  ASSERT_FALSE(failure.ok()) << "a Loop whose carried value changes dtype ran";
  EXPECT_NE(failure.message().find("bad_loop"), std::string::npos) << failure.to_string();
}

}  // namespace
}  // namespace nfuse::passes_test
