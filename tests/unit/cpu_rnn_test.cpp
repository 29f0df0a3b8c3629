// The cpu backend's LSTM and GRU (f32, default activations) against the ref backend, forward,
// reverse and bidirectional, with and without bias and initial states, on awkward
// batch/input/hidden sizes; GRU with both linear_before_reset settings; sequence_lens (entries of
// full, partial and zero length, constant or fed at run time, in every direction) on the cpu
// kernel, and a length outside [0, seq] refused with the entry named.
#include <map>
#include <string>
#include <vector>

#include "compile/plan_stats.h"
#include "cpu_typed_node.h"

namespace nfuse {
namespace {

using cpu_test::random_tensor;
using cpu_test::TypedNode;

struct Case {
  int64_t seq, batch, input, hidden;
};

TypedNode rnn_node(const std::string& op, const Case& c, const std::string& direction, bool bias, bool states,
                   std::mt19937& rng) {
  const int64_t d = direction == "bidirectional" ? 2 : 1;
  const int64_t g = op == "LSTM" ? 4 : 3;
  TypedNode n;
  n.op = op;
  n.outputs = op == "LSTM" ? 3 : 2;
  n.inputs.push_back({random_tensor({c.seq, c.batch, c.input}, rng), false});
  n.inputs.push_back({random_tensor({d, g * c.hidden, c.input}, rng, -0.5f, 0.5f), true});
  n.inputs.push_back({random_tensor({d, g * c.hidden, c.hidden}, rng, -0.5f, 0.5f), true});
  n.inputs.push_back({bias ? random_tensor({d, 2 * g * c.hidden}, rng) : ir::Tensor(), true});
  n.inputs.push_back({ir::Tensor(), true});  // sequence_lens
  if (states) {
    n.inputs.push_back({random_tensor({d, c.batch, c.hidden}, rng), false});
    if (op == "LSTM") n.inputs.push_back({random_tensor({d, c.batch, c.hidden}, rng), false});
  }
  n.attrs.set("hidden_size", c.hidden);
  n.attrs.set("direction", direction);
  return n;
}

TEST(CpuRnn, Lstm) {
  std::mt19937 rng(cpu_test::kSeed + 60);
  for (const Case& c : {Case{1, 1, 1, 1}, Case{5, 3, 7, 16}, Case{9, 1, 17, 15}, Case{4, 6, 32, 33}}) {
    for (const char* dir : {"forward", "reverse", "bidirectional"}) {
      for (bool bias : {false, true}) {
        for (bool states : {false, true}) {
          const TypedNode n = rnn_node("LSTM", c, dir, bias, states, rng);
          const std::string what = std::string("LSTM ") + dir + " seq " + std::to_string(c.seq) + " batch " +
                                   std::to_string(c.batch) + " input " + std::to_string(c.input) + " hidden " +
                                   std::to_string(c.hidden) + (bias ? " bias" : "") + (states ? " states" : "");
          cpu_test::expect_typed_matches_ref(n, 4 * (c.input + c.hidden), what, c.hidden > 20 ? 3 : 1);
        }
      }
    }
  }
}

TEST(CpuRnn, Gru) {
  std::mt19937 rng(cpu_test::kSeed + 62);
  for (const Case& c : {Case{1, 1, 1, 1}, Case{5, 3, 7, 16}, Case{9, 1, 17, 15}, Case{4, 6, 32, 33}}) {
    for (const char* dir : {"forward", "reverse", "bidirectional"}) {
      for (int64_t lbr : {0, 1}) {
        for (bool bias_states : {false, true}) {
          TypedNode n = rnn_node("GRU", c, dir, bias_states, bias_states, rng);
          n.attrs.set("linear_before_reset", lbr);
          if (bias_states && lbr) n.attrs.set("clip", 0.9f);
          const std::string what = std::string("GRU ") + dir + " lbr " + std::to_string(lbr) + " seq " +
                                   std::to_string(c.seq) + " batch " + std::to_string(c.batch) + " input " +
                                   std::to_string(c.input) + " hidden " + std::to_string(c.hidden) +
                                   (bias_states ? " bias states" : "");
          cpu_test::expect_typed_matches_ref(n, 4 * (c.input + c.hidden), what, c.hidden > 20 ? 3 : 1);
        }
      }
    }
  }
}

// The nodes of n's plan on `cpu` that run on reference kernels.
std::vector<std::string> reference_nodes(const TypedNode& n) {
  runtime::SessionOptions o;
  o.backend = "cpu";
  auto s = runtime::Session::create(n.build(), o);
  if (!s.ok()) return {"session: " + s.status().to_string()};
  std::map<std::string, std::vector<int64_t>> dims;
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (!n.inputs[i].tensor.empty() && !n.inputs[i].constant)
      dims["in" + std::to_string(i)] = n.inputs[i].tensor.dims();
  auto plan = (*s)->prepare(dims);
  if (!plan.ok()) return {"plan: " + plan.status().to_string()};
  return compile::compute_stats((*s)->graph(), **plan).reference_nodes;
}

ir::Tensor lengths(const std::vector<int32_t>& v) {
  ir::Tensor t = ir::Tensor::allocate(ir::DType::kI32, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data<int32_t>());
  return t;
}

TEST(CpuRnn, SequenceLengths) {
  std::mt19937 rng(cpu_test::kSeed + 63);
  const Case c{6, 5, 7, 12};
  for (const char* op : {"LSTM", "GRU"}) {
    for (const char* dir : {"forward", "reverse", "bidirectional"}) {
      for (bool constant : {true, false}) {
        TypedNode n = rnn_node(op, c, dir, true, true, rng);
        n.inputs[4] = {lengths({6, 0, 3, 6, 1}), constant};
        const std::string what = std::string(op) + " " + dir + " sequence_lens" + (constant ? " constant" : " input");
        cpu_test::expect_typed_matches_ref(n, 4 * (c.input + c.hidden), what, 2);
        EXPECT_TRUE(reference_nodes(n).empty()) << what << ": ran on the reference kernel";
      }
    }
    TypedNode full = rnn_node(op, c, "bidirectional", false, false, rng);  // every entry full: the plain path
    full.inputs[4] = {lengths({6, 6, 6, 6, 6}), false};
    cpu_test::expect_typed_matches_ref(full, 4 * (c.input + c.hidden), std::string(op) + " full lengths");
    TypedNode bad = rnn_node(op, c, "forward", false, false, rng);
    bad.inputs[4] = {lengths({6, 7, 1, 1, 1}), false};
    auto r = bad.run("cpu", 1);
    ASSERT_FALSE(r.ok()) << op;
    EXPECT_NE(r.status().to_string().find("sequence_lens[1] = 7"), std::string::npos) << r.status().to_string();
  }
}

// Clip and explicit default activation names stay on the fast path; others fall back.
TEST(CpuRnn, LstmAttributes) {
  std::mt19937 rng(cpu_test::kSeed + 61);
  TypedNode clip = rnn_node("LSTM", {6, 2, 5, 8}, "forward", true, false, rng);
  clip.attrs.set("clip", 0.7f);
  cpu_test::expect_typed_matches_ref(clip, 52, "LSTM clip");
  TypedNode named = rnn_node("LSTM", {3, 2, 5, 8}, "bidirectional", true, true, rng);
  named.attrs.set("activations",
                  std::vector<std::string>{"Sigmoid", "Tanh", "Tanh", "Sigmoid", "Tanh", "Tanh"});
  cpu_test::expect_typed_matches_ref(named, 52, "LSTM named activations");
  TypedNode relu = rnn_node("LSTM", {3, 2, 5, 8}, "forward", true, false, rng);
  relu.attrs.set("activations", std::vector<std::string>{"Sigmoid", "Relu", "Tanh"});
  cpu_test::expect_typed_matches_ref(relu, 52, "LSTM relu (reference)");
}

}  // namespace
}  // namespace nfuse
