// Scan: runs `body` once per position along the scan axis, threading N state values through
// and stacking M per-step outputs.
//   opset 9+: inputs  states[N], scan_inputs[K] (axis scan_input_axes, default 0);
//             outputs final states[N], scan_outputs[M] (axis scan_output_axes, default 0).
//   opset 8:  input 0 is sequence_lens (optional) and every input/output has a leading batch dim;
//             scan inputs are [batch, seq, ...].
// The body takes N + K inputs and gives N + M outputs; their shapes come from inference
// through the body with the inputs' per-step types.
#include <string>
#include <vector>

#include "ops/builtin_ops.h"
#include "ops/op_helpers.h"
#include "ops/subgraph_infer.h"

namespace nfuse::ops {
namespace {

bool is_scan8(const ir::Node& node) { return node.opset > 0 && node.opset < 9; }

Status verify_scan(const ir::Node& node) {
  auto body = node.attrs.get_graph("body");
  if (!body) return invalid_model(node.label() + ": graph attribute 'body' is missing");
  auto k = node.attrs.require_int("num_scan_inputs");
  if (!k.ok()) return invalid_model(node.label() + ": " + k.status().message());
  const int first = is_scan8(node) ? 1 : 0;
  for (int i = first; i < node.num_inputs(); ++i)
    if (!node.has_input(i)) return invalid_model(node.label() + ": input " + std::to_string(i) + " is missing");
  const int64_t n_states = node.num_inputs() - first - *k;
  if (*k < 1 || n_states < 0) return invalid_model(node.label() + ": num_scan_inputs is out of range");
  const int64_t n_scan_out = node.num_outputs() - n_states;
  if (n_scan_out < 0) return invalid_model(node.label() + ": fewer outputs than state inputs");
  if (static_cast<int64_t>(body->inputs().size()) != n_states + *k ||
      static_cast<int64_t>(body->outputs().size()) != n_states + n_scan_out) {
    return invalid_model(node.label() + ": body takes " + std::to_string(body->inputs().size()) + " inputs and gives " +
                         std::to_string(body->outputs().size()) + " outputs; expected " +
                         std::to_string(n_states + *k) + " and " + std::to_string(n_states + n_scan_out));
  }
  for (const char* name : {"directions", "scan_input_directions", "scan_output_directions"}) {
    for (int64_t d : node.attrs.get_ints(name))
      if (d != 0 && d != 1) return invalid_model(node.label() + ": " + name + " entries must be 0 or 1");
  }
  const auto in_axes = node.attrs.get_ints("scan_input_axes");
  const auto out_axes = node.attrs.get_ints("scan_output_axes");
  if ((!in_axes.empty() && static_cast<int64_t>(in_axes.size()) != *k) ||
      (!out_axes.empty() && static_cast<int64_t>(out_axes.size()) != n_scan_out)) {
    return invalid_model(node.label() + ": scan_input_axes / scan_output_axes have the wrong length");
  }
  return ok_status();
}

// `shape` without its dims [first, first + count); unknown rank stays unknown.
ir::Shape drop_dims(const ir::Shape& shape, int first, int count) {
  if (!shape.rank_known()) return shape;
  std::vector<ir::Dim> dims;
  for (int i = 0; i < shape.rank(); ++i)
    if (i < first || i >= first + count) dims.push_back(shape[i]);
  return ir::Shape(std::move(dims));
}

ir::Shape insert_dims(const ir::Shape& shape, int at, const std::vector<ir::Dim>& extra) {
  if (!shape.rank_known()) return shape;
  std::vector<ir::Dim> dims = shape.dims();
  dims.insert(dims.begin() + at, extra.begin(), extra.end());
  return ir::Shape(std::move(dims));
}

Status infer_scan(ir::InferContext& ctx) {
  const ir::Node& node = ctx.node;
  const bool v8 = is_scan8(node);
  const int first = v8 ? 1 : 0;
  const int k = static_cast<int>(ctx.attrs().get_int("num_scan_inputs", 1));
  const int n = ctx.num_inputs() - first - k;
  const int m = ctx.num_outputs() - n;
  const auto in_axes = ctx.attrs().get_ints("scan_input_axes", std::vector<int64_t>(static_cast<size_t>(k), 0));
  const auto out_axes = ctx.attrs().get_ints("scan_output_axes", std::vector<int64_t>(static_cast<size_t>(m), 0));
  ir::Dim seq, batch;
  std::vector<ir::TensorType> body_in;
  for (int i = 0; i < n; ++i) {
    const ir::TensorType& t = ctx.input(first + i);
    if (v8 && t.shape.rank_known() && t.shape.rank() < 1) return ctx.error("opset-8 state inputs need a batch dim");
    if (v8 && t.shape.rank_known()) batch = t.shape[0];
    body_in.push_back({t.dtype, v8 ? drop_dims(t.shape, 0, 1) : t.shape});
  }
  for (int j = 0; j < k; ++j) {
    const ir::TensorType& t = ctx.input(first + n + j);
    if (!t.shape.rank_known()) {
      body_in.push_back({t.dtype, t.shape});
      continue;
    }
    int axis = 1;
    if (!v8) {
      auto a = normalize_axis(in_axes[static_cast<size_t>(j)], t.shape.rank());
      if (!a) return ctx.error("scan input " + std::to_string(j) + " axis is out of range");
      axis = *a;
    } else if (t.shape.rank() < 2) {
      return ctx.error("opset-8 scan inputs need batch and sequence dims");
    }
    const ir::Dim& d = t.shape[axis];
    if (d.is_static() && seq.is_static() && d.value != seq.value) return ctx.error("scan inputs differ in length");
    if (d.is_static()) seq = d;
    body_in.push_back({t.dtype, v8 ? drop_dims(t.shape, 0, 2) : drop_dims(t.shape, axis, 1)});
  }
  NFUSE_ASSIGN_OR_RETURN(auto body_out, infer_subgraph(node, *ctx.attrs().get_graph("body"), body_in));
  for (int i = 0; i < n; ++i) {
    const ir::TensorType& t = body_out[static_cast<size_t>(i)];
    ctx.output(i) = {t.dtype, v8 ? insert_dims(t.shape, 0, {batch}) : t.shape};
  }
  for (int j = 0; j < m; ++j) {
    const ir::TensorType& t = body_out[static_cast<size_t>(n + j)];
    int axis = 0;
    if (!v8 && t.shape.rank_known()) {
      auto a = normalize_axis(out_axes[static_cast<size_t>(j)], t.shape.rank() + 1);
      if (!a) return ctx.error("scan output " + std::to_string(j) + " axis is out of range");
      axis = *a;
    }
    ctx.output(n + j) = {t.dtype, v8 ? insert_dims(t.shape, 0, {batch, seq}) : insert_dims(t.shape, axis, {seq})};
  }
  return ok_status();
}

}  // namespace

void register_scan_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{.op_type = "Scan",
                            .min_inputs = 0,
                            .max_inputs = 1 << 16,
                            .min_outputs = 0,
                            .max_outputs = 1 << 16,
                            .verify = verify_scan,
                            .infer = infer_scan});
}

}  // namespace nfuse::ops
