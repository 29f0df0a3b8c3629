#include "passes/pass_util.h"

#include <algorithm>
#include <cmath>

namespace nfuse::passes {

ir::Node* producer_of(const ir::Value* v, const char* op_type) {
  if (!v || !v->producer || v->producer_output != 0 || v->is_constant()) return nullptr;
  ir::Node* n = v->producer;
  if (!n->domain.empty() && n->domain != "ai.onnx") return nullptr;
  if (op_type[0] != '\0' && n->op_type != op_type) return nullptr;
  return n;
}

ir::Node* sole_consumer(const ir::Value* v) {
  if (!v || v->is_graph_output || v->is_graph_input || v->consumers.size() != 1) return nullptr;
  return v->consumers[0];
}

bool only_used_by(const ir::Value* v, const std::vector<const ir::Node*>& users) {
  if (!v || v->is_graph_output || v->is_graph_input || !v->producer) return false;
  for (const ir::Node* c : v->consumers)
    if (std::find(users.begin(), users.end(), c) == users.end()) return false;
  return true;
}

std::optional<double> scalar_constant(const ir::Value* v) {
  if (!v || !v->constant || v->constant->numel() != 1) return std::nullopt;
  if (!ir::dtype_is_float(v->constant->dtype()) && v->constant->dtype() != ir::DType::kI64 &&
      v->constant->dtype() != ir::DType::kI32) {
    return std::nullopt;
  }
  return v->constant->get_double(0);
}

bool is_scalar_constant(const ir::Value* v, double expected) {
  auto s = scalar_constant(v);
  if (!s) return false;
  if (expected == 0) return *s == 0;
  return std::fabs(*s - expected) <= 1e-6 * std::fabs(expected);
}

std::optional<ScalarOperand> scalar_operand(const ir::Node& node) {
  if (node.num_inputs() != 2 || !node.input(0) || !node.input(1)) return std::nullopt;
  for (int i = 0; i < 2; ++i) {
    auto s = scalar_constant(node.input(i));
    ir::Value* other = node.input(1 - i);
    if (s && !other->is_constant()) return ScalarOperand{other, *s, 1 - i};
  }
  return std::nullopt;
}

bool same_rank_and_static_dims(const ir::Shape& a, const ir::Shape& b) {
  if (!a.rank_known() || !b.rank_known() || a.rank() != b.rank()) return false;
  for (int i = 0; i < a.rank(); ++i)
    if (a[i].is_static() && b[i].is_static() && a[i].value != b[i].value) return false;
  return true;
}

bool is_f32(const ir::Value* v) { return v && v->type.dtype == ir::DType::kF32; }

Result<int> rewrite_until_done(ir::Graph& graph, const std::function<Result<bool>(ir::Node&)>& try_rewrite) {
  int rewrites = 0;
  graph.relink();
  for (;;) {
    bool changed = false;
    for (const auto& n : graph.nodes()) {
      NFUSE_ASSIGN_OR_RETURN(changed, try_rewrite(*n));
      if (changed) break;
    }
    if (!changed) return rewrites;
    ++rewrites;
    graph.compact();
    NFUSE_RETURN_IF_ERROR(graph.topo_sort(), "after a rewrite");
  }
}

ir::Value* add_constant(ir::Graph& graph, const std::string& hint, ir::Tensor t) {
  ir::Value* v = graph.add_unique_value(hint, ir::TensorType{t.dtype(), ir::Shape::from_dims(t.dims())});
  v->constant = std::move(t);
  return v;
}

void take_over_output(ir::Node& node, int slot, ir::Value* v) { node.outputs[static_cast<size_t>(slot)] = v; }

void set_constant_input(ir::Graph& graph, ir::Node& node, int slot, const std::string& hint, ir::Tensor t) {
  if (static_cast<int>(node.inputs.size()) <= slot) node.inputs.resize(static_cast<size_t>(slot) + 1, nullptr);
  ir::Value* old = node.inputs[static_cast<size_t>(slot)];
  if (old && old->consumers.size() == 1 && !old->is_graph_input && !old->is_graph_output) {
    old->type = ir::TensorType{t.dtype(), ir::Shape::from_dims(t.dims())};
    old->constant = std::move(t);
    return;
  }
  node.inputs[static_cast<size_t>(slot)] = add_constant(graph, hint, std::move(t));
}


// Output channels of a Conv ([Cout, Cin/g, k...]) or ConvTranspose ([Cin, Cout/g, k...]) from
// its weight's static shape.
std::optional<int64_t> conv_output_channels(const ir::Node& p) {
  const ir::Value* w = p.input(1);
  if (!w) return std::nullopt;
  auto d = w->type.shape.static_dims();
  if (!d || d->size() < 3) return std::nullopt;
  if (p.op_type == "Conv") return (*d)[0];
  return (*d)[1] * p.attrs.get_int("group", 1);
}

// The per-channel values of `c` added to an output of rank `rank` with `channels` channels:
// `c` must broadcast only along the channel axis (dims 1 except axis 1 = channels) or be a
// scalar, so that the Add neither changes the output's shape nor mixes positions.
std::optional<std::vector<float>> per_channel_constant(const ir::Tensor& c, int rank, int64_t channels) {
  if (c.dtype() != ir::DType::kF32 || c.rank() > rank || rank < 3) return std::nullopt;
  const float* v = c.data<float>();
  if (c.numel() == 1) return std::vector<float>(static_cast<size_t>(channels), v[0]);
  const int offset = rank - c.rank();
  for (int i = 0; i < c.rank(); ++i) {
    const int axis = offset + i;
    const int64_t want = axis == 1 ? channels : 1;
    if (c.dim(i) != want) return std::nullopt;
  }
  return std::vector<float>(v, v + channels);
}

int64_t channel_constant_count(const ir::Tensor& c, int x_rank) {
  if (x_rank < 3 || c.rank() < x_rank - 1 || c.rank() > x_rank) return 0;
  const int axis = 1 - (x_rank - c.rank());
  for (int i = 0; i < c.rank(); ++i)
    if (i != axis && c.dim(i) != 1) return 0;
  return c.dim(axis) > 1 ? c.dim(axis) : 0;
}

}  // namespace nfuse::passes
