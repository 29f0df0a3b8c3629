#include "passes/fuse_qdq_lookup.h"

#include <algorithm>
#include <limits>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "ops/qlinear_region.h"
#include "passes/pass_util.h"
#include "passes/qdq16_match.h"
#include "passes/qdq_match.h"
#include "passes/region_match.h"

namespace nfuse::passes {
namespace {

// Input codes of an 8-bit and of a 16-bit x: the table's length.
int64_t table_size(ir::DType x) { return is_q16(x) ? 65536 : 256; }
const ir::Tensor* constant(const ir::Value* v) { return v && v->constant ? &*v->constant : nullptr; }

// A per-tensor Q/DQ whose scale and zero point are constants (the evaluator computes with them).
bool per_tensor_constant_params(const ir::Node& n) {
  if (n.attrs.get_int("block_size", 0) != 0) return false;
  const ir::Tensor* s = constant(n.input(1));
  if (!s || s->numel() != 1 || !ir::dtype_is_float(s->dtype())) return false;
  return !n.input(2) || (constant(n.input(2)) && constant(n.input(2))->numel() == 1);
}

// A region whose root is a DequantizeLinear (r.root).
std::optional<ElementwiseRegion> find_region(ir::Graph& graph, ir::Node& q) {
  auto r = find_elementwise_region(graph, q, [](const ir::Node& n) { return is_qdq_op(&n, "DequantizeLinear"); });
  if (!r || !r->root->input(0)) return std::nullopt;
  return r;
}

// table[i] = the region on input code i (u8 / u16: i; s8: i - 128; s16: i - 32768), computed as
// the graph would. Per-channel constants (8-bit x only): the codes run as a [1, C, 256, 1...]
// tensor (x's rank), so each channel's constants broadcast onto its own row, and the table is
// [C, 256].
Result<ir::Tensor> compute_table(const ElementwiseRegion& r, const ir::Node& q, const NodeEvaluator& evaluate) {
  const ir::DType xt = r.root->input(0)->type.dtype;
  const int64_t table_len = table_size(xt);
  const int64_t rows = r.channels;
  std::vector<int64_t> dims = {table_len};
  if (rows > 1) {
    dims.assign(static_cast<size_t>(r.x_rank), 1);
    dims[1] = rows;
    dims[2] = table_len;
  }
  ir::Tensor codes = ir::Tensor::allocate(xt, dims);
  for (int64_t i = 0; i < rows * table_len; ++i) {
    const int64_t code = i % table_len;
    if (xt == ir::DType::kU8)
      codes.data<uint8_t>()[i] = static_cast<uint8_t>(code);
    else if (xt == ir::DType::kI8)
      codes.data<int8_t>()[i] = static_cast<int8_t>(code - 128);
    else if (xt == ir::DType::kU16)
      codes.data<uint16_t>()[i] = static_cast<uint16_t>(code);
    else
      codes.data<int16_t>()[i] = static_cast<int16_t>(code - 32768);
  }
  std::unordered_map<const ir::Value*, ir::Tensor> values;
  auto run = [&](const ir::Node& n, const ir::Tensor* data, int data_slot) -> Status {
    std::vector<const ir::Tensor*> in;
    for (int i = 0; i < n.num_inputs(); ++i) {
      const ir::Value* v = n.input(i);
      if (i == data_slot) in.push_back(data);
      else if (!v) in.push_back(nullptr);
      else if (v->constant) in.push_back(&*v->constant);
      else in.push_back(&values.at(v));
    }
    NFUSE_ASSIGN_OR_RETURN(std::vector<ir::Tensor> outs, evaluate(n, in));
    if (outs.size() != 1 || outs[0].numel() != rows * table_len) {
      return unsupported(n.label() + ": does not map each channel's input codes to as many values");
    }
    values[n.output(0)] = std::move(outs[0]);
    return ok_status();
  };
  NFUSE_RETURN_IF_ERROR_PLAIN(run(*r.root, &codes, 0));
  for (const ir::Node* n : r.nodes) NFUSE_RETURN_IF_ERROR_PLAIN(run(*n, nullptr, -1));
  NFUSE_RETURN_IF_ERROR_PLAIN(run(q, nullptr, -1));
  ir::Tensor table =
      rows > 1 ? values.at(q.output(0)).reshaped({rows, table_len}) : values.at(q.output(0)).reshaped({table_len});
  if (is_q16(xt) ? !is_q16(table.dtype()) : !is_q8(table.dtype()))
    return unsupported(q.label() + ": output is not of the input's width (8 or 16 bits)");
  return table;
}

// The region as nfuse.QLinearRegion (ops/qlinear_region.cpp): its nodes as steps over slots,
// its constants as inputs ([1] or [C]). False (nothing changed) for an op the program does not
// run or a constant it cannot take.
bool fuse_as_region(ir::Graph& graph, const ElementwiseRegion& r, ir::Node& q, PassLog& log) {
  RegionSteps steps;
  if (!region_steps(r, r.root->output(0), &steps)) return false;
  // The op takes both zero points as inputs; a Q/DQ that leaves one implicit keeps its own form.
  if (!r.root->has_input(2) || !q.has_input(2)) return false;
  std::string chain = r.root->label();
  for (const ir::Node* n : r.nodes) chain += " -> " + n->label();
  chain += " -> " + q.label();
  const ir::Node* last = q.input(0)->producer;
  std::vector<ir::Value*> inputs = {r.root->input(0), r.root->input(1), r.root->input(2), q.input(1), q.input(2)};
  for (size_t j = 0; j < steps.constants.size(); ++j)
    inputs.push_back(add_constant(graph, last->name + "_c" + std::to_string(j), std::move(steps.constants[j])));
  ir::Node* region = graph.add_node("QLinearRegion", last->name, inputs, {});
  set_region_steps(graph, *region, steps);
  std::vector<const ir::Node*> users(r.nodes.begin(), r.nodes.end());
  users.push_back(&q);  // an empty region: q reads the DequantizeLinear itself
  if (only_used_by(r.root->output(0), users)) graph.remove_node(r.root);
  for (ir::Node* n : r.nodes) graph.remove_node(n);
  ir::Value* out = q.output(0);
  graph.remove_node(&q);
  q.outputs[0] = nullptr;
  region->outputs = {out};
  log.add("fused " + chain + " into QLinearRegion '" + region->name + "' (" + std::to_string(steps.ops.size()) +
          " steps)");
  return true;
}

// Pattern (q is the QuantizeLinear offered):
//   DequantizeLinear(x_q u8/s8, x_scale, x_zp) -> x          (per tensor, constant parameters)
//   f(x): element-wise float ops whose only non-constant input is x, e.g.
//         Sigmoid(x) | HardSwish(x) | LeakyRelu(x) | Clip(x, lo, hi) | nfuse.Gelu(x)
//         | Mul(x, Sigmoid(x)) (SiLU) | Tanh(Softplus(x)) * x (Mish) | Div(Mul(x, Clip(Add(x, 3), 0, 6)), 6)
//   QuantizeLinear(f(x), y_scale, y_zp) -> y_q                (per tensor, constant parameters)
//     -> nfuse.QLinearLookup(x_q, table[256]),  table[i] = y_q of code i (s8: code i - 128)
//   Constants of one value per channel (axis 1; activation equalization's rescaling) give a
//   [C, 256] table, row c for channel c. 16-bit x_q and y_q (W8A16) give a [65536] table
//   (s16: code i - 32768); with per-channel constants (C x 128 KiB of tables), or x_q and y_q of
//   different widths, the region becomes nfuse.QLinearRegion instead, the ops run on chunks of
//   each channel plane. f may be empty: DequantizeLinear -> QuantizeLinear, a requantization (a
//   table of the QuantizeLinear alone, or a region of one Identity step).
// Every value inside f feeds only f (q for its result) and is no graph output; x may have other
// users (then the DequantizeLinear stays for them).
Result<bool> try_fuse(ir::Graph& graph, ir::Node& q, const NodeEvaluator& evaluate, PassLog& log) {
  if (!is_qdq_op(&q, "QuantizeLinear") || !q.input(0) || !q.output(0)) return false;
  const ir::DType yt = q.output(0)->type.dtype;
  if (!per_tensor_constant_params(q) || !(is_q8(yt) || is_q16(yt))) return false;
  auto r = find_region(graph, q);
  if (!r || !per_tensor_constant_params(*r->root)) return false;
  const ir::DType xt = r->root->input(0)->type.dtype;
  if (!(is_q8(xt) || is_q16(xt))) return false;
  // Mixed widths (a requantization between an int16 and an int8 layer), or 16 bits with
  // per-channel constants: no table, the region op.
  if (is_q16(xt) != is_q16(yt) || (is_q16(xt) && r->channels > 1)) return fuse_as_region(graph, *r, q, log);
  auto table = compute_table(*r, q, evaluate);
  if (!table.ok()) return false;  // an op the ref kernels cannot run on these values: leave it
  if (table->dtype() != q.output(0)->type.dtype) return false;

  std::string chain = r->root->label();
  for (const ir::Node* n : r->nodes) chain += " -> " + n->label();
  chain += " -> " + q.label();
  ir::Node* last = q.input(0)->producer;
  ir::Value* t = add_constant(graph, last->name + "_table", std::move(*table));
  ir::Node* lookup = graph.add_node("QLinearLookup", last->name, {r->root->input(0), t}, {});
  lookup->domain = "nfuse";
  lookup->opset = 1;
  if (!graph.opsets.count("nfuse")) graph.opsets["nfuse"] = 1;
  std::vector<const ir::Node*> users(r->nodes.begin(), r->nodes.end());
  users.push_back(&q);  // an empty region: q reads the DequantizeLinear itself
  if (only_used_by(r->root->output(0), users)) graph.remove_node(r->root);
  for (ir::Node* n : r->nodes) graph.remove_node(n);
  ir::Value* out = q.output(0);
  graph.remove_node(&q);
  q.outputs[0] = nullptr;  // `out` has one producer from here on: the lookup
  lookup->outputs = {out};
  log.add("fused " + chain + " into QLinearLookup '" + lookup->name + "'");
  return true;
}

// Pattern: com.microsoft QLinearSigmoid | QLinearLeakyRelu(x_q u8/s8, x_scale, x_zp?, y_scale, y_zp?)
//   with constant scalar parameters  ->  nfuse.QLinearLookup(x_q, table[256]), the table computed
//   by the op's own ref kernel on every input code.
Result<bool> try_fuse_contrib(ir::Graph& graph, ir::Node& n, const NodeEvaluator& evaluate, PassLog& log) {
  if (n.domain != "com.microsoft" || (n.op_type != "QLinearSigmoid" && n.op_type != "QLinearLeakyRelu")) return false;
  if (!n.input(0) || !n.output(0) || !is_q8(n.input(0)->type.dtype)) return false;
  std::vector<const ir::Tensor*> in = {nullptr};
  for (int i = 1; i < n.num_inputs(); ++i) {
    const ir::Value* v = n.input(i);
    if (v && (!constant(v) || constant(v)->numel() != 1)) return false;
    in.push_back(v ? constant(v) : nullptr);
  }
  constexpr int64_t kTableSize = 256;
  ir::Tensor codes = ir::Tensor::allocate(n.input(0)->type.dtype, {kTableSize});
  for (int64_t i = 0; i < kTableSize; ++i) {  // u8 code i, s8 code i - 128: the byte i ^ 0x80
    static_cast<uint8_t*>(codes.raw())[i] = static_cast<uint8_t>(codes.dtype() == ir::DType::kU8 ? i : i ^ 0x80);
  }
  in[0] = &codes;
  auto outs = evaluate(n, in);
  if (!outs.ok() || outs->size() != 1 || (*outs)[0].numel() != kTableSize || !is_q8((*outs)[0].dtype())) return false;
  ir::Value* t = add_constant(graph, n.name + "_table", (*outs)[0].reshaped({kTableSize}));
  ir::Node* lookup = graph.add_node("QLinearLookup", n.name, {n.input(0), t}, {});
  lookup->domain = "nfuse";
  lookup->opset = 1;
  if (!graph.opsets.count("nfuse")) graph.opsets["nfuse"] = 1;
  const std::string label = n.label();
  ir::Value* out = n.output(0);
  graph.remove_node(&n);
  n.outputs[0] = nullptr;  // `out` has one producer from here on: the lookup
  lookup->outputs = {out};
  log.add("rewrote " + label + " into QLinearLookup '" + lookup->name + "'");
  return true;
}

}  // namespace

Status fuse_qdq_lookup(ir::Graph& graph, const NodeEvaluator& evaluator, PassLog& log) {
  if (!evaluator) return ok_status();
  auto r = rewrite_until_done(graph, [&](ir::Node& n) -> Result<bool> {
    NFUSE_ASSIGN_OR_RETURN(bool done, try_fuse_contrib(graph, n, evaluator, log));
    return done ? Result<bool>(true) : try_fuse(graph, n, evaluator, log);
  });
  return r.status();
}

}  // namespace nfuse::passes
