#include "backends/cpu/cpu_conv_region_epilogue.h"

#include <algorithm>

namespace nfuse::backends::cpu {

Result<ConvRegionEpilogue> ConvRegionEpilogue::read(const ir::Node& node, size_t channels) {
  std::vector<const ir::Tensor*> inputs;
  for (const ir::Value* v : node.inputs) {
    if (v && !v->constant && v != node.input(0)) return unsupported(node.label() + ": non-constant parameters");
    inputs.push_back(v && v->constant ? &*v->constant : nullptr);
  }
  const ir::Tensor* xs = inputs.size() > 6 ? inputs[1] : nullptr;
  const ir::Tensor* ws = inputs.size() > 6 ? inputs[4] : nullptr;
  const ir::Tensor* ys = inputs.size() > 7 ? inputs[6] : nullptr;
  const ir::Tensor* yz = inputs.size() > 7 ? inputs[7] : nullptr;
  if (!xs || !ws || !ys || !yz || xs->numel() != 1 || ys->numel() != 1 || yz->numel() != 1 ||
      (ws->numel() != 1 && ws->numel() != static_cast<int64_t>(channels)))
    return unsupported(node.label() + ": region parameters");
  ConvRegionEpilogue e;
  NFUSE_RETURN_IF_ERROR_PLAIN(read_region_body(node, inputs, 9, static_cast<int64_t>(channels), &e.program_));
  if (e.program_.steps.size() >= 64 || e.program_.constants.size() >= 64)
    return unsupported(node.label() + ": more than 64 steps or constants");
  e.program_.y_scale = ys->data<float>()[0];
  e.program_.y_zp = yz->get_int(0);
  e.y_signed_ = yz->dtype() == ir::DType::kI8;
  const float x_scale = xs->data<float>()[0];
  for (size_t c = 0; c < channels; ++c) e.scale_.push_back(x_scale * ws->data<float>()[ws->numel() == 1 ? 0 : c]);
  const kernels::Isa isa = kernels::selected_isa();
  e.eval_ = kernels::region_eval_select(isa);
  // The reference's last step, the multiply by f32(1 / y_scale), folded into the quantization.
  e.q_ = kernels::f32_quantize_params(1.0f / e.program_.y_scale, static_cast<int32_t>(e.program_.y_zp), e.y_signed_, 8);
  e.q_.multiply = true;
  e.q8_ = kernels::f32_quantize_q8_select(isa);
  return e;
}

void ConvRegionEpilogue::finish(const float* v, size_t n, size_t c, uint8_t* y, float* work) const {
  const size_t steps = program_.steps.size();
  float consts[64];
  for (size_t j = 0; j < program_.constants.size(); ++j) consts[j] = program_.constants[j][c];
  float* slots[65];
  for (size_t s = 0; s < steps; ++s) slots[1 + s] = work + s * kPiece;
  for (size_t at = 0; at < n; at += kPiece) {
    const size_t len = std::min(kPiece, n - at);
    slots[0] = const_cast<float*>(v + at);  // the steps read slot 0 and write the others
    eval_(program_.steps.data(), steps, consts, slots, len);
    q8_(slots[steps], len, q_, y + at);
  }
}

}  // namespace nfuse::backends::cpu
