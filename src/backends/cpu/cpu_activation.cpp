// Activations on the cpu backend: the fused-epilogue helper (Activation) that Conv/Gemm kernels
// apply to their output rows while they are hot, and the stand-alone unary ops Relu, Clip,
// Sigmoid, HardSigmoid, HardSwish, LeakyRelu and Tanh. Sigmoid, SiLU and Tanh run the vector
// exp-based kernels of src/kernels/f32-vunary for the ISA the CPU selects.
#include <algorithm>
#include <cmath>

#include "backends/cpu/cpu_op.h"
#include "kernels/f32-vbinary/f32_vbinary.h"
#include "kernels/f32-vmath/f32_vmath.h"
#include "kernels/f32-vunary/f32_vunary.h"

namespace nfuse::backends::cpu {

bool Activation::needs_pass() const {
  return has_affine() || (kind != ops::FusedActivation::kNone && kind != ops::FusedActivation::kRelu &&
                          kind != ops::FusedActivation::kClip);
}

void Activation::apply_affine(float* y, size_t n) const {
  if (has_affine()) kernels::f32_vbinary_config(kernels::selected_isa()).affine(y, scale, shift, y, n);
}

namespace {

// std::clamp(t, 0, 1) with NaN passed through, written as selects the vectorizer turns into
// max/min instructions (std::clamp's reference-returning branches keep the loops scalar).
inline float unit_clamp(float t) {
  t = t < 0.0f ? 0.0f : t;
  return t > 1.0f ? 1.0f : t;
}

}  // namespace

void Activation::apply(float* y, size_t n) const {
  apply_activation(y, n);
  apply_affine(y, n);
}

void Activation::apply_activation(float* y, size_t n) const {
  switch (kind) {
    case ops::FusedActivation::kNone:
    case ops::FusedActivation::kRelu:
    case ops::FusedActivation::kClip:
      return;
    case ops::FusedActivation::kLeakyRelu: {
      const float a = params[0];
      for (size_t i = 0; i < n; ++i) y[i] = y[i] >= 0.0f ? y[i] : a * y[i];
      return;
    }
    case ops::FusedActivation::kSigmoid:
      kernels::f32_vunary_config(kernels::selected_isa()).sigmoid(y, y, n);
      return;
    case ops::FusedActivation::kSiLU:
      kernels::f32_vunary_config(kernels::selected_isa()).silu(y, y, n);
      return;
    case ops::FusedActivation::kTanh:
      kernels::f32_vunary_config(kernels::selected_isa()).tanh(y, y, n);
      return;
    case ops::FusedActivation::kGelu: kernels::f32_vmath_config(kernels::selected_isa()).gelu(y, y, n); return;
    case ops::FusedActivation::kGeluTanh: kernels::f32_vmath_config(kernels::selected_isa()).gelu_tanh(y, y, n); return;
    case ops::FusedActivation::kHardSigmoid: {
      const float a = params[0], b = params[1];
      for (size_t i = 0; i < n; ++i) y[i] = unit_clamp(a * y[i] + b);
      return;
    }
    case ops::FusedActivation::kHardSwish:
      kernels::f32_vunary_config(kernels::selected_isa()).hardswish(y, y, n, params[0], params[1]);
      return;
    default:  // anything newer: the shared double-precision definition
      for (size_t i = 0; i < n; ++i) y[i] = static_cast<float>(ops::apply_fused_activation(kind, params, y[i]));
      return;
  }
}

Activation make_activation(const ops::FusedEpilogue& e) {
  Activation a = make_activation(e.activation, e.params);
  a.scale = e.scale;
  a.shift = e.shift;
  return a;
}

Activation make_activation(ops::FusedActivation kind, const std::vector<float>& params) {
  Activation a;
  a.kind = kind;
  a.params = params;
  if (kind == ops::FusedActivation::kRelu) a.min = 0.0f;
  if (kind == ops::FusedActivation::kClip) {
    a.min = params[0];
    a.max = params[1];
  }
  return a;
}

namespace {

// Unary ops as an Activation over the flat tensor, split in chunks across the pool.
class UnaryOp final : public CpuOp {
 public:
  UnaryOp(Activation act, bool clip_inputs, bool tanh) : act_(std::move(act)), clip_inputs_(clip_inputs), tanh_(tanh) {}

  Status run(const OpTensors& t, RunContext& rc) override {
    Activation act = act_;
    if (clip_inputs_) {  // Clip-11+: min/max are (optional, scalar) inputs
      if (t.inputs.size() > 1 && t.inputs[1]) act.min = t.inputs[1]->data<float>()[0];
      if (t.inputs.size() > 2 && t.inputs[2]) act.max = t.inputs[2]->data<float>()[0];
    }
    const float* x = t.inputs[0]->data<float>();
    float* y = t.outputs[0]->data<float>();
    const size_t n = static_cast<size_t>(t.outputs[0]->numel());
    constexpr size_t kChunk = 16384;
    const kernels::F32VunaryFn tanh = tanh_ ? kernels::f32_vunary_config(kernels::selected_isa()).tanh : nullptr;
    auto task = [&](size_t i, size_t) {
      const size_t b = i * kChunk, e = std::min(n, b + kChunk);
      if (tanh) {
        tanh(x + b, y + b, e - b);
        return;
      }
      for (size_t j = b; j < e; ++j) y[j] = std::min(std::max(x[j], act.min), act.max);
      if (act.needs_pass()) act.apply(y + b, e - b);
    };
    rc.pool.run((n + kChunk - 1) / kChunk, task);
    return ok_status();
  }

 private:
  Activation act_;
  bool clip_inputs_ = false;
  bool tanh_ = false;
};

}  // namespace

std::unique_ptr<CpuOp> make_unary(const ir::Node& node) {
  if (!is_f32(node.input(0)) || node.num_outputs() != 1) return nullptr;
  const std::string& op = node.op_type;
  using FA = ops::FusedActivation;
  if (op == "Relu") return std::make_unique<UnaryOp>(make_activation(FA::kRelu, {}), false, false);
  if (op == "Tanh") return std::make_unique<UnaryOp>(Activation{}, false, true);
  if (op == "Sigmoid") return std::make_unique<UnaryOp>(make_activation(FA::kSigmoid, {}), false, false);
  if (op == "LeakyRelu") {
    return std::make_unique<UnaryOp>(make_activation(FA::kLeakyRelu, {node.attrs.get_float("alpha", 0.01f)}), false,
                                     false);
  }
  if (op == "HardSigmoid" || op == "HardSwish") {
    const bool swish = op == "HardSwish";
    std::vector<float> p = {swish ? 1.0f / 6.0f : node.attrs.get_float("alpha", 0.2f),
                            swish ? 0.5f : node.attrs.get_float("beta", 0.5f)};
    return std::make_unique<UnaryOp>(make_activation(swish ? FA::kHardSwish : FA::kHardSigmoid, p), false, false);
  }
  if (op == "Clip") {
    for (int i = 1; i < node.num_inputs(); ++i) {
      if (node.has_input(i) && !is_f32(node.input(i))) return nullptr;
    }
    Activation a = make_activation(FA::kClip, {node.attrs.get_float("min", -std::numeric_limits<float>::infinity()),
                                               node.attrs.get_float("max", std::numeric_limits<float>::infinity())});
    return std::make_unique<UnaryOp>(std::move(a), true, false);
  }
  return nullptr;
}

}  // namespace nfuse::backends::cpu
