// Which nodes the fusion engine can run as group members, and the factory for their layers.
#include <set>

#include "backends/cpu/cpu_qlinear_ops.h"
#include "backends/fusion/strip_layer_impl.h"
#include "ops/fused_epilogue.h"

namespace nfuse::backends::fusion {
namespace {

std::optional<std::vector<int64_t>> dims4(const PlanView& type_of, const ir::Value* v) {
  if (!v) return std::nullopt;
  return type_of(v).shape.static_dims();
}

bool constant_f32(const ir::Value* v) { return v && v->constant && v->constant->dtype() == ir::DType::kF32; }

// Clip's bounds as constants (opset 11+ inputs, or the opset 6 attributes).
bool clip_bounds(const ir::Node& node, float* lo, float* hi) {
  *lo = node.attrs.get_float("min", -std::numeric_limits<float>::infinity());
  *hi = node.attrs.get_float("max", std::numeric_limits<float>::infinity());
  for (int i = 1; i <= 2; ++i) {
    if (!node.has_input(i)) continue;
    const ir::Value* v = node.input(i);
    if (!constant_f32(v) || v->constant->numel() != 1) return false;
    (i == 1 ? *lo : *hi) = v->constant->data<float>()[0];
  }
  return true;
}

}  // namespace

Rejection rank_or_shape(const PlanView& type_of, const ir::Value* v, const char* what) {
  const ir::TensorType& t = type_of(v);
  if (t.shape.rank_known() && t.shape.rank() != 4)
    return reject(SupportReason::kRank,
                  std::string(what) + " '" + v->name + "' has rank " + std::to_string(t.shape.rank()));
  if (!t.shape.is_static())
    return reject(SupportReason::kDynamicShape, std::string(what) + " '" + v->name + "' is " + t.shape.to_string());
  return {};
}

bool binary_operand_kind(const std::vector<int64_t>& out, const std::vector<int64_t>& other, StripLayer::Operand* kind) {
  int64_t numel = 1;
  for (int64_t d : other) numel *= d;
  if (numel == 1) {
    *kind = StripLayer::Operand::kScalar;
  } else if (other == out) {
    *kind = StripLayer::Operand::kFull;
  } else if ((other.size() == 4 && other[1] == out[1] && other[2] == 1 && other[3] == 1 &&
              (other[0] == out[0] || other[0] == 1)) ||
             (other.size() == 3 && other[0] == out[1] && other[1] == 1 && other[2] == 1)) {
    *kind = StripLayer::Operand::kPerChannel;
  } else {
    return false;
  }
  return true;
}

bool unary_activation(const ir::Node& node, ops::FusedActivation* kind, std::vector<float>* params) {
  params->clear();
  const std::string& op = node.op_type;
  if (op == "Relu") {
    *kind = ops::FusedActivation::kRelu;
  } else if (op == "Sigmoid") {
    *kind = ops::FusedActivation::kSigmoid;
  } else if (op == "Tanh") {
    *kind = ops::FusedActivation::kTanh;
  } else if (op == "HardSwish") {
    *kind = ops::FusedActivation::kHardSwish;
    *params = {1.0f / 6.0f, 0.5f};
  } else if (op == "HardSigmoid") {
    *kind = ops::FusedActivation::kHardSigmoid;
    *params = {node.attrs.get_float("alpha", 0.2f), node.attrs.get_float("beta", 0.5f)};
  } else if (op == "LeakyRelu") {
    *kind = ops::FusedActivation::kLeakyRelu;
    *params = {node.attrs.get_float("alpha", 0.01f)};
  } else if (op == "Clip") {
    float lo, hi;
    if (!clip_bounds(node, &lo, &hi)) return false;
    *kind = ops::FusedActivation::kClip;
    *params = {lo, hi};
  } else {
    return false;
  }
  return true;
}

bool is_qlinear_add(const ir::Node& node) { return node.domain == "com.microsoft" && node.op_type == "QLinearAdd"; }
bool is_qlinear_lookup(const ir::Node& node) { return node.domain == "nfuse" && node.op_type == "QLinearLookup"; }
bool is_qlinear_concat(const ir::Node& node) { return node.domain == "com.microsoft" && node.op_type == "QLinearConcat"; }
bool is_concat(const ir::Node& node) { return is_qlinear_concat(node) || (node.domain.empty() && node.op_type == "Concat"); }

std::vector<int> row_inputs(const ir::Node& node) {
  if (is_qlinear_add(node)) return {0, 3};
  if (node.domain.empty() && (node.op_type == "Add" || node.op_type == "Mul")) return {0, 1};
  if (node.domain.empty() && node.op_type == "Concat") {
    std::vector<int> all(node.inputs.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
    return all;
  }
  if (is_qlinear_concat(node)) {  // Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per input
    std::vector<int> xs;
    for (size_t i = 2; i + 2 < node.inputs.size(); i += 3) xs.push_back(static_cast<int>(i));
    return xs;
  }
  return {0};
}

bool elementwise_binary(const ir::Node& node) {
  return is_qlinear_add(node) || (node.domain.empty() && (node.op_type == "Add" || node.op_type == "Mul"));
}

int main_input_index(const ir::Node& node, const ir::Value* preferred, const PlanView& type_of) {
  if (is_concat(node)) {
    const std::vector<int> parts = row_inputs(node);
    for (int i : parts)
      if (preferred && node.input(i) == preferred) return i;
    return parts.empty() ? 0 : parts.front();
  }
  if (is_qlinear_add(node)) return preferred && node.input(3) == preferred && node.input(0) != preferred ? 3 : 0;
  if (node.op_type != "Add" && node.op_type != "Mul") return 0;
  if (preferred && node.input(1) == preferred && node.input(0) != preferred) return 1;
  if (preferred && node.input(0) == preferred) return 0;
  const ir::Value* a = node.input(0);
  const ir::Value* b = node.input(1);
  if (!a || !b) return 0;
  if (a->constant && !b->constant) return 1;
  if (b->constant) return 0;
  const ir::Shape& out = type_of(node.output(0)).shape;
  return type_of(a).shape == out || type_of(b).shape != out ? 0 : 1;
}

// The integer members: QLinearConv (depthwise up to 514 taps), QLinearAdd of two same-shape operands.
Rejection int8_rejection(const ir::Node& node, const PlanView& type_of) {
  const ir::Value* x = node.input(0);
  if (!x || node.outputs.size() != 1 || !node.output(0))
    return reject(SupportReason::kUnsupportedOp, node.op_type + " operands");
  if (Rejection why = rank_or_shape(type_of, x, "input"); !why.empty()) return why;
  if (Rejection why = rank_or_shape(type_of, node.output(0), "output"); !why.empty()) return why;
  if (is_qlinear_add(node)) {
    kernels::Q8VbinaryParams p;
    return qadd_params(node, type_of, &p);
  }
  QConvParams q;
  if (Rejection why = qconv_params(node, type_of, &q); !why.empty()) return why;
  auto g = ops::resolve_conv(node.attrs, *type_of(x).shape.static_dims(), node.input(3)->constant->dims());
  if (!g.ok()) return reject(SupportReason::kUnsupportedOp, "QLinearConv geometry does not resolve");
  const bool depthwise = g->group > 1 && g->group == g->in_channels && g->group == g->out_channels;
  if (depthwise && g->kernel[0] * g->kernel[1] > kMaxExactF32Taps)
    return reject(SupportReason::kUnsupportedOp, "depthwise QLinearConv with more than 514 taps");
  return {};
}

bool elementwise_member(const ir::Node& node) {
  ops::FusedActivation kind;
  std::vector<float> params;
  return elementwise_binary(node) || is_qlinear_lookup(node) || unary_activation(node, &kind, &params);
}

// Concat along channels of 4-D values of one batch, height and width, each used once.
Rejection concat_rejection(const ir::Node& node, const PlanView& type_of) {
  const std::vector<int> parts = row_inputs(node);
  if (parts.size() < 2) return reject(SupportReason::kUnsupportedOp, node.op_type + " of fewer than two inputs");
  const int64_t axis = node.attrs.get_int("axis", 0);
  if (axis != 1 && axis != -3)
    return reject(SupportReason::kUnsupportedOp, node.op_type + " along an axis other than channels");
  if (Rejection why = rank_or_shape(type_of, node.output(0), "output"); !why.empty()) return why;
  const auto out = *type_of(node.output(0)).shape.static_dims();
  std::set<const ir::Value*> seen;
  for (int i : parts) {
    const ir::Value* v = node.input(i);
    if (!v || v->constant)
      return reject(SupportReason::kUnsupportedOp, node.op_type + " with a missing or constant input");
    if (!seen.insert(v).second) return reject(SupportReason::kUnsupportedOp, node.op_type + " of one value twice");
    if (Rejection why = rank_or_shape(type_of, v, "input"); !why.empty()) return why;
    const auto d = *type_of(v).shape.static_dims();
    if (d[0] != out[0] || d[2] != out[2] || d[3] != out[3])
      return reject(SupportReason::kUnsupportedOp, node.op_type + " inputs of other planes");
  }
  return {};
}

Rejection qconcat_rejection(const ir::Node& node, const PlanView& type_of) {
  ir::DType t;
  std::vector<cpu::QConcatInput> requant;
  if (std::string why = cpu::qlinear_concat_inputs(node, &t, &requant); !why.empty())
    return reject(SupportReason::kUnsupportedOp, why);
  if (node.outputs.size() != 1 || !node.output(0))
    return reject(SupportReason::kUnsupportedOp, "QLinearConcat with extra outputs");
  for (int i : row_inputs(node)) {
    const ir::Value* v = node.input(i);
    if (v && type_of(v).dtype != t)
      return reject(SupportReason::kDtype, "QLinearConcat input '" + v->name + "' is " +
                                               std::string(ir::dtype_name(type_of(v).dtype)) + ", Y is " +
                                               std::string(ir::dtype_name(t)));
  }
  return concat_rejection(node, type_of);
}

namespace {

// MaxPool (f32, u8, i8) and AveragePool (f32) whose windows resolve.
Rejection pool_rejection(const ir::Node& node, const PlanView& type_of) {
  const ir::Value* x = node.input(0);
  if (Rejection why = rank_or_shape(type_of, x, "input"); !why.empty()) return why;
  if (Rejection why = rank_or_shape(type_of, node.output(0), "output"); !why.empty()) return why;
  const std::string& op = node.op_type;
  if (op == "MaxPool" && node.attrs.get_int("storage_order", 0) != 0)
    return reject(SupportReason::kUnsupportedOp, "MaxPool storage_order 1");
  if (op == "AveragePool" && node.attrs.get_int("count_include_pad", 0) != 0 &&
      (node.attrs.get_int("ceil_mode", 0) != 0 || node.attrs.get_string("auto_pad", "NOTSET") != "NOTSET"))
    return reject(SupportReason::kUnsupportedOp, "AveragePool counting pads in ceil_mode / auto_pad");
  if (!ops::resolve_pool(node.attrs, *dims4(type_of, x)).ok())
    return reject(SupportReason::kUnsupportedOp, "pool geometry does not resolve");
  return {};
}

}  // namespace

Rejection member_rejection(const ir::Node& node, const PlanView& type_of) {
  static const std::set<std::string> kOps = {"Conv",    "ConvTranspose", "MaxPool",     "AveragePool", "Relu",
                                             "Clip",    "LeakyRelu",     "Sigmoid",     "HardSigmoid", "HardSwish", "Tanh",
                                             "Add",     "Mul",           "Concat",      "MatMul",
                                             "Gemm",    "QLinearConv"};
  if (is_qlinear_add(node) || (node.domain.empty() && node.op_type == "QLinearConv")) return int8_rejection(node, type_of);
  if (is_qconv16(node)) return qconv16_rejection(node, type_of);
  if (is_qlinear_lookup(node)) return qlookup_rejection(node, type_of);
  if (is_qlinear_concat(node)) return qconcat_rejection(node, type_of);
  if (node.domain.empty() && node.op_type == "Resize") return resize_rejection(node, type_of);
  if (!node.domain.empty() || !kOps.count(node.op_type)) {
    const std::string op = node.domain.empty() ? node.op_type : node.domain + "." + node.op_type;
    return reject(SupportReason::kUnsupportedOp, "the fusion engine has no strip kernel for " + op);
  }
  if (node.outputs.size() != 1 || !node.output(0))
    return reject(SupportReason::kUnsupportedOp, node.op_type + " with extra outputs");
  if (node.op_type == "MaxPool" && node.input(0) &&
      (type_of(node.input(0)).dtype == ir::DType::kU8 || type_of(node.input(0)).dtype == ir::DType::kI8))
    return pool_rejection(node, type_of);
  for (const ir::Value* v : node.inputs) {
    if (!v || v->constant) continue;
    if (type_of(v).dtype != ir::DType::kF32)
      return reject(SupportReason::kDtype, "'" + v->name + "' is " + std::string(ir::dtype_name(type_of(v).dtype)) +
                                               "; fused groups run f32 only");
  }
  const bool binary = node.op_type == "Add" || node.op_type == "Mul";
  const ir::Value* x = node.input(binary ? main_input_index(node, nullptr, type_of) : 0);
  if (!x) return reject(SupportReason::kUnsupportedOp, node.op_type + " with a missing input");
  if (Rejection why = rank_or_shape(type_of, x, "input"); !why.empty()) return why;
  if (Rejection why = rank_or_shape(type_of, node.output(0), "output"); !why.empty()) return why;
  const std::string& op = node.op_type;
  if (op == "Conv") {
    if (!constant_f32(node.input(1)) || node.input(1)->constant->rank() != 4)
      return reject(SupportReason::kUnsupportedOp, "Conv with non-constant weights");
    if (node.input(1)->constant->numel() == 0) return reject(SupportReason::kUnsupportedOp, "Conv with empty weights");
    if (node.has_input(2) && !constant_f32(node.input(2)))
      return reject(SupportReason::kUnsupportedOp, "Conv with a non-constant bias");
    auto e = ops::read_fused_epilogue(node);
    if (!e.ok()) return reject(SupportReason::kUnsupportedOp, e.status().message());
    if (e->bias) return reject(SupportReason::kUnsupportedOp, "Conv with an nfuse.bias epilogue");
    if (e->residual && !rank_or_shape(type_of, e->residual, "residual").empty())
      return rank_or_shape(type_of, e->residual, "residual");
    if (e->residual && *dims4(type_of, e->residual) != *dims4(type_of, node.output(0)))
      return reject(SupportReason::kUnsupportedOp, "Conv residual of another shape");
    if (!ops::resolve_conv(node.attrs, *dims4(type_of, x), node.input(1)->constant->dims()).ok())
      return reject(SupportReason::kUnsupportedOp, "Conv geometry does not resolve");
    return {};
  }
  if (op == "ConvTranspose") return conv_transpose_rejection(node, type_of);
  if (op == "Concat") return concat_rejection(node, type_of);
  if (op == "MatMul") return matmul_rejection(node, type_of);
  if (op == "Gemm") return reject(SupportReason::kRank, "Gemm multiplies matrices; fused groups carry 4-D planes");
  if (op == "MaxPool" || op == "AveragePool") return pool_rejection(node, type_of);
  if (op == "Add" || op == "Mul") {
    const auto out = *dims4(type_of, node.output(0));
    const int m = main_input_index(node, nullptr, type_of);
    const ir::Value* other = node.input(1 - m);
    if (!other) return reject(SupportReason::kUnsupportedOp, op + " with a missing input");
    if (*dims4(type_of, node.input(m)) != out)
      return reject(SupportReason::kUnsupportedOp, op + " whose output is not its main input's shape");
    const ir::TensorType& t = type_of(other);
    if (!t.shape.is_static())
      return reject(SupportReason::kDynamicShape, op + " operand '" + other->name + "' is " + t.shape.to_string());
    if (t.dtype != ir::DType::kF32)
      return reject(SupportReason::kDtype, op + " operand '" + other->name + "' is not f32");
    StripLayer::Operand kind;
    if (!binary_operand_kind(out, *t.shape.static_dims(), &kind))
      return reject(SupportReason::kUnsupportedOp,
                    op + " operand '" + other->name + "' of shape " + t.shape.to_string() +
                        " (fused groups take full-shape, per-channel or scalar operands)");
    return {};
  }
  ops::FusedActivation kind;
  std::vector<float> params;
  if (!unary_activation(node, &kind, &params))
    return reject(SupportReason::kUnsupportedOp, op + " with non-constant bounds");
  return {};
}

Result<std::unique_ptr<StripLayer>> make_strip_layer(const ir::Node& node, const PlanView& type_of, int main_input,
                                                     PackStore* packs) {
  std::unique_ptr<StripLayer> layer;
  if (node.op_type == "Conv" || node.op_type == "ConvTranspose") {
    if (node.op_type == "Conv") {
      NFUSE_ASSIGN_OR_RETURN(layer, make_strip_conv(node, type_of, packs));
    } else {
      NFUSE_ASSIGN_OR_RETURN(layer, make_strip_conv_transpose(node, type_of, packs));
    }
    NFUSE_ASSIGN_OR_RETURN(ops::FusedEpilogue e, ops::read_fused_epilogue(node));
    if (e.residual) {
      layer->externals.push_back(e.residual);
      layer->external_kinds.push_back(StripLayer::Operand::kFull);
      layer->external_constant.push_back(false);
    }
  } else if (node.op_type == "QLinearConv") {
    NFUSE_ASSIGN_OR_RETURN(layer, make_strip_qconv(node, type_of, packs));
  } else if (is_qconv16(node)) {
    NFUSE_ASSIGN_OR_RETURN(layer, make_strip_qconv16(node, type_of, packs));
  } else if (is_qlinear_add(node)) {
    NFUSE_ASSIGN_OR_RETURN(layer, make_strip_qadd(node, type_of, main_input));
  } else if (is_qlinear_lookup(node)) {
    NFUSE_ASSIGN_OR_RETURN(layer, make_strip_qlookup(node, type_of));
  } else if (node.op_type == "MaxPool" || node.op_type == "AveragePool") {
    NFUSE_ASSIGN_OR_RETURN(layer, make_strip_pool(node, type_of));
  } else if (node.op_type == "Add" || node.op_type == "Mul") {
    NFUSE_ASSIGN_OR_RETURN(layer, make_strip_binary(node, type_of, main_input));
  } else if (is_concat(node)) {
    NFUSE_ASSIGN_OR_RETURN(layer, make_strip_concat(node, type_of, main_input));
  } else if (node.op_type == "MatMul") {
    NFUSE_ASSIGN_OR_RETURN(layer, make_strip_matmul(node, type_of, packs));
  } else if (node.op_type == "Resize") {
    NFUSE_ASSIGN_OR_RETURN(layer, make_strip_resize(node, type_of));
  } else {
    NFUSE_ASSIGN_OR_RETURN(layer, make_strip_unary(node, type_of));
  }
  layer->node = &node;
  return layer;
}

}  // namespace nfuse::backends::fusion
