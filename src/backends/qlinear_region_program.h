// What the ref and cpu kernels of nfuse.QLinearRegion (ops/qlinear_region.cpp) read from the node:
// the steps (kernels/f32-region/f32_region.h), the quantization parameters and each constant as a
// per-channel vector (one element: the same value for every channel).
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "kernels/f32-region/f32_region.h"
#include "kernels/quant_arithmetic.h"
#include "nfuse/status.h"

namespace nfuse::backends {

struct QLinearRegionProgram {
  std::vector<kernels::RegionStep> steps;
  float x_scale = 1.0f, y_scale = 1.0f;
  int64_t x_zp = 0, y_zp = 0;
  // constants[j][c]: constant j's value for channel c (c in [0, channels)).
  std::vector<std::vector<float>> constants;
  int64_t channels = 1;
};

// The steps and constants of a region whose constants are inputs first_constant.. of `node`
// (inputs[i]: input i's value; constants must be present). `channels`: the tensor's dim 1.
inline Status read_region_body(const ir::Node& node, const std::vector<const ir::Tensor*>& inputs,
                               size_t first_constant, int64_t channels, QLinearRegionProgram* p) {
  p->channels = channels;
  std::string error;
  if (!kernels::region_program(
          node.attrs.get_strings("ops"), node.attrs.get_ints("operands"), node.attrs.get_floats("params"),
          inputs.size() < first_constant ? 0 : inputs.size() - first_constant, &p->steps, &error)) {
    return invalid_model(node.label() + ": " + error);
  }
  for (size_t j = first_constant; j < inputs.size(); ++j) {
    const ir::Tensor* c = inputs[j];
    if (!c || c->dtype() != ir::DType::kF32 || (c->numel() != 1 && c->numel() != channels))
      return invalid_model(node.label() + ": constant " + std::to_string(j - first_constant) +
                           " must be f32 with 1 or " + std::to_string(channels) + " elements");
    std::vector<float> v(static_cast<size_t>(channels));
    for (int64_t ch = 0; ch < channels; ++ch) v[static_cast<size_t>(ch)] = c->data<float>()[c->numel() == 1 ? 0 : ch];
    p->constants.push_back(std::move(v));
  }
  return ok_status();
}

// From the node and its input tensors (inputs[i]: input i's value; constants must be present).
// `channels`: X's dim 1 (1 for rank < 2).
inline Result<QLinearRegionProgram> read_qlinear_region(const ir::Node& node,
                                                        const std::vector<const ir::Tensor*>& inputs,
                                                        int64_t channels) {
  QLinearRegionProgram p;
  for (int i : {1, 2, 3, 4}) {
    if (inputs.size() <= static_cast<size_t>(i) || !inputs[static_cast<size_t>(i)] ||
        inputs[static_cast<size_t>(i)]->numel() != 1)
      return invalid_model(node.label() + ": input " + std::to_string(i) + " must be one element");
  }
  NFUSE_RETURN_IF_ERROR_PLAIN(read_region_body(node, inputs, 5, channels, &p));
  p.x_scale = inputs[1]->data<float>()[0];
  p.x_zp = inputs[2]->get_int(0);
  p.y_scale = inputs[3]->data<float>()[0];
  p.y_zp = inputs[4]->get_int(0);
  return p;
}

// nfuse.QLinearConvRegion's output rounding (ops/qlinear_conv_region.cpp): the result times
// f32(1 / y_scale) as a last step, then quantized with scale 1 (the kernels skip the division),
// where QuantizeLinear divides by y_scale.
inline void multiply_by_output_reciprocal(QLinearRegionProgram* p) {
  p->constants.emplace_back(static_cast<size_t>(p->channels), 1.0f / p->y_scale);
  kernels::RegionStep mul;
  mul.op = kernels::RegionOp::kMul;
  mul.a = static_cast<int32_t>(p->steps.size());
  mul.b = -static_cast<int32_t>(p->constants.size());
  p->steps.push_back(mul);
  p->y_scale = 1.0f;
}

inline void run_region_to_quantized(const QLinearRegionProgram& p, ir::DType yt, void* y, size_t at, size_t n,
                                    int64_t c, float* const* slots);

// n elements of channel c: x (X's dtype `xt`, from element offset `at`) dequantized, the steps
// run, the result quantized into y (`yt`). `slots`: steps + 1 buffers of n floats.
inline void run_qlinear_region(const QLinearRegionProgram& p, ir::DType xt, const void* x, ir::DType yt, void* y,
                               size_t at, size_t n, int64_t c, float* const* slots) {
  float* x0 = slots[0];
  auto load = [&]<typename Q>(const Q* src) {
    for (size_t i = 0; i < n; ++i) x0[i] = dequantize_value(src[at + i], p.x_scale, p.x_zp);
  };
  switch (xt) {
    case ir::DType::kU8: load(static_cast<const uint8_t*>(x)); break;
    case ir::DType::kI8: load(static_cast<const int8_t*>(x)); break;
    case ir::DType::kU16: load(static_cast<const uint16_t*>(x)); break;
    default: load(static_cast<const int16_t*>(x)); break;
  }
  run_region_to_quantized(p, yt, y, at, n, c, slots);
}

// The steps on slots[0] (n floats of channel c), the result quantized into y (`yt`, from
// element offset `at`) with the program's y_scale and y_zp: the part after the input's load.
inline void run_region_to_quantized(const QLinearRegionProgram& p, ir::DType yt, void* y, size_t at, size_t n,
                                    int64_t c, float* const* slots) {
  float consts[64];
  for (size_t j = 0; j < p.constants.size() && j < 64; ++j) consts[j] = p.constants[j][static_cast<size_t>(c)];
  kernels::region_eval(p.steps.data(), p.steps.size(), consts, slots, n);
  const float* r = slots[p.steps.size()];
  auto store = [&]<typename Q>(Q* dst) {
    for (size_t i = 0; i < n; ++i) dst[at + i] = quantize_value<Q>(r[i], p.y_scale, p.y_zp);
  };
  switch (yt) {
    case ir::DType::kU8: store(static_cast<uint8_t*>(y)); break;
    case ir::DType::kI8: store(static_cast<int8_t*>(y)); break;
    case ir::DType::kU16: store(static_cast<uint16_t*>(y)); break;
    default: store(static_cast<int16_t*>(y)); break;
  }
}

}  // namespace nfuse::backends
