// The cpu backend's LSTM and GRU (f32, default activations) against the ref backend, forward,
// reverse and bidirectional, with and without bias and initial states, on awkward
// batch/input/hidden sizes; GRU with both linear_before_reset settings.
#include <string>
#include <vector>

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
