// Small pattern-matching helpers shared by the rewrite passes.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace nfuse::passes {

// The node producing `v`, when it has the given op type (any op for ""), is in the default
// domain, and `v` is its output 0; nullptr otherwise.
ir::Node* producer_of(const ir::Value* v, const char* op_type = "");
// The only consumer of `v` when exactly one node uses it (once), it is not a graph output and
// not a graph input; nullptr otherwise.
ir::Node* sole_consumer(const ir::Value* v);
// True when `v` is an intermediate that a rewrite may delete: produced by a node, used only
// by the nodes in `users` (counting repeated uses), and not a graph output.
bool only_used_by(const ir::Value* v, const std::vector<const ir::Node*>& users);
// The value of a constant with exactly one element, as double.
std::optional<double> scalar_constant(const ir::Value* v);
// True when `v` is a constant scalar within a relative 1e-6 (absolute for 0) of `expected`.
bool is_scalar_constant(const ir::Value* v, double expected);
// For a binary node with one constant-scalar input, the other input and the scalar.
struct ScalarOperand {
  ir::Value* other = nullptr;
  double scalar = 0;
  int other_index = 0;
};
std::optional<ScalarOperand> scalar_operand(const ir::Node& node);
// True when both ranks are known and equal and every dim static in both agrees.
bool same_rank_and_static_dims(const ir::Shape& a, const ir::Shape& b);
// True when `v` is float32 (the dtype the fusion passes rewrite).
bool is_f32(const ir::Value* v);
// Repeats until nothing matches: relink, offer each node in order to `try_rewrite`, which
// returns true after rewriting the graph (nodes it replaced passed to remove_node, new nodes
// added anywhere), then compact and re-sort. Returns the number of rewrites, or the first error.
Result<int> rewrite_until_done(ir::Graph& graph, const std::function<Result<bool>(ir::Node&)>& try_rewrite);
// A new constant value named after `hint` holding `t`; its type is the tensor's.
ir::Value* add_constant(ir::Graph& graph, const std::string& hint, ir::Tensor t);
// The channel count of a constant holding one value per channel (axis 1) of a tensor of rank
// `x_rank` >= 3 under right-aligned broadcasting ([C, 1, 1] or [1, C, 1, 1] for NCHW), every
// other dim 1; 0 when it is not one (one element included).
int64_t channel_constant_count(const ir::Tensor& c, int x_rank);
// Output channels of a Conv ([Cout, Cin/g, k...]) or ConvTranspose ([Cin, Cout/g, k...]) from
// its weight's static shape.
std::optional<int64_t> conv_output_channels(const ir::Node& p);
// The per-channel values of a float32 constant `c` combined element-wise with an NC... output
// of rank `rank` and `channels` channels, when `c` varies only along the channel axis (dims 1
// except axis 1 = channels) or is a scalar; nullopt otherwise.
std::optional<std::vector<float>> per_channel_constant(const ir::Tensor& c, int rank, int64_t channels);
// Replaces input `slot` of `node` by `t`: in place when the node is the constant's only user,
// as a new constant otherwise (a shared initializer must keep its old value for the others).
void set_constant_input(ir::Graph& graph, ir::Node& node, int slot, const std::string& hint, ir::Tensor t);
// Makes `node`'s output `slot` be `v`, removing whatever value it produced before from use;
// `v` must be produced by a node that the caller removes in the same rewrite.
void take_over_output(ir::Node& node, int slot, ir::Value* v);

}  // namespace nfuse::passes
