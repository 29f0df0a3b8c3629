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

namespace nfuse::passes {
namespace {

// Input codes of an 8-bit and of a 16-bit x: the table's length.
int64_t table_size(ir::DType x) { return is_q16(x) ? 65536 : 256; }
// A bound on the region: activations are a handful of ops; more means something else is going on.
constexpr size_t kMaxRegionNodes = 16;

const ir::Tensor* constant(const ir::Value* v) { return v && v->constant ? &*v->constant : nullptr; }

// Default-domain ops that map each element on its own (one data input; Clip's bounds are
// constants checked below).
const std::set<std::string>& unary_ops() {
  static const std::set<std::string> ops = {
      "Abs",     "Acos",     "Acosh",    "Asin",  "Asinh",       "Atan",  "Atanh",    "Ceil",  "Celu",
      "Clip",    "Cos",      "Cosh",     "Elu",   "Erf",         "Exp",   "Floor",    "HardSigmoid",
      "HardSwish", "Identity", "LeakyRelu", "Log", "Mish",       "Neg",   "Reciprocal", "Relu", "Round",
      "Selu",    "Sigmoid",  "Sign",     "Sin",   "Sinh",        "Softplus", "Softsign", "Sqrt", "Tan",
      "Tanh",    "ThresholdedRelu"};
  return ops;
}

// Default-domain binary element-wise ops: inside a region each operand is a region value (all
// have x's shape) or a one-element constant.
const std::set<std::string>& binary_ops() {
  static const std::set<std::string> ops = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "PRelu"};
  return ops;
}

// A one-element constant that cannot broadcast x (of rank `x_rank`, -1 unknown) to a larger shape.
bool scalar_like(const ir::Value* v, int x_rank) {
  const ir::Tensor* c = constant(v);
  return c && c->numel() == 1 && (c->rank() == 0 || c->rank() <= x_rank);
}

// A constant operand a region may hold: one element, or one per channel. *channels: the
// per-channel count it implies (unchanged for one element); false on a mismatch.
bool region_constant(const ir::Value* v, int x_rank, int64_t* channels) {
  if (scalar_like(v, x_rank)) return true;
  const int64_t c = constant(v) ? channel_constant_count(*constant(v), x_rank) : 0;
  if (c == 0 || (*channels > 1 && *channels != c)) return false;
  *channels = c;
  return true;
}

bool is_elementwise(const ir::Node& n, int x_rank, int64_t* channels) {
  if (n.outputs.size() != 1 || !n.output(0) || !n.implicit_inputs.empty()) return false;
  if (!ir::dtype_is_float(n.output(0)->type.dtype)) return false;
  if (n.domain == "nfuse") return n.op_type == "Gelu" && n.num_inputs() == 1;
  if (!n.domain.empty() && n.domain != "ai.onnx") return false;
  if (unary_ops().count(n.op_type)) {
    if (!n.input(0) || n.input(0)->constant) return false;
    for (int i = 1; i < n.num_inputs(); ++i)
      if (n.input(i) && !scalar_like(n.input(i), x_rank)) return false;
    return n.op_type == "Clip" || n.num_inputs() == 1;
  }
  if (binary_ops().count(n.op_type)) {
    if (n.num_inputs() != 2 || !n.input(0) || !n.input(1)) return false;
    int data = 0;
    for (int i = 0; i < 2; ++i) {
      if (!n.input(i)->constant) ++data;
      else if (n.op_type == "PRelu" ? !scalar_like(n.input(i), x_rank) : !region_constant(n.input(i), x_rank, channels))
        return false;
    }
    return data > 0;
  }
  return false;
}

// A per-tensor Q/DQ whose scale and zero point are constants (the evaluator computes with them).
bool per_tensor_constant_params(const ir::Node& n) {
  if (n.attrs.get_int("block_size", 0) != 0) return false;
  const ir::Tensor* s = constant(n.input(1));
  if (!s || s->numel() != 1 || !ir::dtype_is_float(s->dtype())) return false;
  return !n.input(2) || (constant(n.input(2)) && constant(n.input(2))->numel() == 1);
}

struct Region {
  ir::Node* dq = nullptr;
  std::vector<ir::Node*> nodes;  // in graph (topological) order
  int64_t channels = 1;          // > 1: per-channel constants, one table per channel
  int x_rank = -1;
};

// The nodes between q's input and one DequantizeLinear, walking producers backwards.
std::optional<Region> find_region(ir::Graph& graph, ir::Node& q) {
  Region r;
  // The region's output has x's shape: its rank bounds the constants' ranks.
  const ir::Shape& ys = q.input(0)->type.shape;
  const int x_rank = ys.rank_known() ? ys.rank() : -1;
  r.x_rank = x_rank;
  std::set<const ir::Node*> members;
  std::vector<ir::Value*> stack = {q.input(0)};
  std::set<const ir::Value*> seen;
  while (!stack.empty()) {
    ir::Value* v = stack.back();
    stack.pop_back();
    if (!seen.insert(v).second) continue;
    ir::Node* p = v->constant ? nullptr : v->producer;
    if (!p) return std::nullopt;
    if (is_qdq_op(p, "DequantizeLinear")) {
      if (r.dq && r.dq != p) return std::nullopt;
      r.dq = p;
      continue;
    }
    if (members.size() >= kMaxRegionNodes || !is_elementwise(*p, x_rank, &r.channels)) return std::nullopt;
    members.insert(p);
    for (ir::Value* in : p->inputs)
      if (in && !in->constant) stack.push_back(in);
  }
  if (!r.dq || !r.dq->input(0)) return std::nullopt;  // no members: DequantizeLinear -> QuantizeLinear
  for (const ir::Node* m : members) {
    // Every intermediate feeds only the region (or q, for its output) and is no graph output.
    const ir::Value* out = m->output(0);
    if (out->is_graph_output) return std::nullopt;
    for (const ir::Node* c : out->consumers)
      if (!members.count(c) && !(c == &q && out == q.input(0))) return std::nullopt;
  }
  for (const auto& n : graph.nodes())
    if (members.count(n.get())) r.nodes.push_back(n.get());
  return r;
}

// table[i] = the region on input code i (u8 / u16: i; s8: i - 128; s16: i - 32768), computed as
// the graph would. Per-channel constants (8-bit x only): the codes run as a [1, C, 256, 1...]
// tensor (x's rank), so each channel's constants broadcast onto its own row, and the table is
// [C, 256].
Result<ir::Tensor> compute_table(const Region& r, const ir::Node& q, const NodeEvaluator& evaluate) {
  const ir::DType xt = r.dq->input(0)->type.dtype;
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
  NFUSE_RETURN_IF_ERROR_PLAIN(run(*r.dq, &codes, 0));
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
bool fuse_as_region(ir::Graph& graph, const Region& r, ir::Node& q, PassLog& log) {
  std::unordered_map<const ir::Value*, int64_t> slot = {{r.dq->output(0), 0}};
  std::vector<std::string> ops;
  std::vector<int64_t> operands;
  std::vector<float> params;
  std::vector<ir::Tensor> constants;
  auto operand = [&](const ir::Value* v, int64_t* out) {
    if (const auto s = slot.find(v); s != slot.end()) return *out = s->second, true;
    const ir::Tensor* c = constant(v);
    if (!c || c->dtype() != ir::DType::kF32) return false;
    const int64_t channels = c->numel() == 1 ? 1 : channel_constant_count(*c, r.x_rank);
    if (channels == 0 || (channels > 1 && channels != r.channels)) return false;
    constants.push_back(c->reshaped({channels}));
    *out = -static_cast<int64_t>(constants.size());
    return true;
  };
  for (const ir::Node* n : r.nodes) {
    const bool binary = binary_ops().count(n->op_type) != 0;
    int64_t a = 0, b = 0;
    float p0 = 0.0f, p1 = 0.0f;
    if (!operand(n->input(0), &a)) return false;
    if (binary && !operand(n->input(1), &b)) return false;
    if (n->op_type == "Clip") {
      p0 = n->attrs.get_float("min", -std::numeric_limits<float>::infinity());
      p1 = n->attrs.get_float("max", std::numeric_limits<float>::infinity());
      for (int i = 1; i <= 2; ++i) {
        if (!n->input(i)) continue;
        const ir::Tensor* c = constant(n->input(i));
        if (!c || c->numel() != 1) return false;
        (i == 1 ? p0 : p1) = static_cast<float>(c->get_double(0));
      }
    } else if (n->op_type == "LeakyRelu") {
      p0 = n->attrs.get_float("alpha", 0.01f);
    } else if (n->op_type == "HardSigmoid") {
      p0 = n->attrs.get_float("alpha", 0.2f);
      p1 = n->attrs.get_float("beta", 0.5f);
    }
    if (!n->domain.empty() || !ops::qlinear_region_runs(n->op_type)) return false;
    ops.push_back(n->op_type);
    operands.insert(operands.end(), {a, b});
    params.insert(params.end(), {p0, p1});
    slot[n->output(0)] = static_cast<int64_t>(ops.size());
  }
  if (ops.empty()) {  // a requantization: DequantizeLinear -> QuantizeLinear
    ops.push_back("Identity");
    operands.insert(operands.end(), {0, 0});
    params.insert(params.end(), {0.0f, 0.0f});
  }
  if (ops.size() + 1 > 64 || constants.size() + 5 > 64) return false;
  // The op takes both zero points as inputs; a Q/DQ that leaves one implicit keeps its own form.
  if (!r.dq->has_input(2) || !q.has_input(2)) return false;
  std::string chain = r.dq->label();
  for (const ir::Node* n : r.nodes) chain += " -> " + n->label();
  chain += " -> " + q.label();
  const ir::Node* last = q.input(0)->producer;
  std::vector<ir::Value*> inputs = {r.dq->input(0), r.dq->input(1), r.dq->input(2), q.input(1), q.input(2)};
  for (size_t j = 0; j < constants.size(); ++j)
    inputs.push_back(add_constant(graph, last->name + "_c" + std::to_string(j), std::move(constants[j])));
  ir::Node* region = graph.add_node("QLinearRegion", last->name, inputs, {});
  region->domain = "nfuse";
  region->opset = 1;
  region->attrs.set("ops", ops);
  region->attrs.set("operands", operands);
  region->attrs.set("params", params);
  if (!graph.opsets.count("nfuse")) graph.opsets["nfuse"] = 1;
  std::vector<const ir::Node*> users(r.nodes.begin(), r.nodes.end());
  users.push_back(&q);  // an empty region: q reads the DequantizeLinear itself
  if (only_used_by(r.dq->output(0), users)) graph.remove_node(r.dq);
  for (ir::Node* n : r.nodes) graph.remove_node(n);
  ir::Value* out = q.output(0);
  graph.remove_node(&q);
  q.outputs[0] = nullptr;
  region->outputs = {out};
  log.add("fused " + chain + " into QLinearRegion '" + region->name + "' (" + std::to_string(ops.size()) + " steps)");
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
  if (!r || !per_tensor_constant_params(*r->dq)) return false;
  const ir::DType xt = r->dq->input(0)->type.dtype;
  if (!(is_q8(xt) || is_q16(xt))) return false;
  // Mixed widths (a requantization between an int16 and an int8 layer), or 16 bits with
  // per-channel constants: no table, the region op.
  if (is_q16(xt) != is_q16(yt) || (is_q16(xt) && r->channels > 1)) return fuse_as_region(graph, *r, q, log);
  auto table = compute_table(*r, q, evaluate);
  if (!table.ok()) return false;  // an op the ref kernels cannot run on these values: leave it
  if (table->dtype() != q.output(0)->type.dtype) return false;

  std::string chain = r->dq->label();
  for (const ir::Node* n : r->nodes) chain += " -> " + n->label();
  chain += " -> " + q.label();
  ir::Node* last = q.input(0)->producer;
  ir::Value* t = add_constant(graph, last->name + "_table", std::move(*table));
  ir::Node* lookup = graph.add_node("QLinearLookup", last->name, {r->dq->input(0), t}, {});
  lookup->domain = "nfuse";
  lookup->opset = 1;
  if (!graph.opsets.count("nfuse")) graph.opsets["nfuse"] = 1;
  std::vector<const ir::Node*> users(r->nodes.begin(), r->nodes.end());
  users.push_back(&q);  // an empty region: q reads the DequantizeLinear itself
  if (only_used_by(r->dq->output(0), users)) graph.remove_node(r->dq);
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
