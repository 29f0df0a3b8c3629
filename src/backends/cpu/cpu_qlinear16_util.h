// What the cpu backend's W8A16 ops (nfuse.QLinearConv16, nfuse.QLinearMatMul16) read from a node
// at compile time: constant per-tensor x / y quantization, constant s8 weights with zero w_zp,
// per-tensor or per-channel w_scale, and the f32 multipliers exactly as ref computes them.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"
#include "kernels/qs16-gemm/qs16_gemm.h"
#include "kernels/quant_arithmetic.h"

namespace nfuse::backends::cpu {

struct W8A16Params {
  const ir::Tensor* w = nullptr;  // s8 constant
  bool x_unsigned = false, y_unsigned = false;
  int32_t x_zp = 0, y_zp = 0;
  int32_t y_min = -32768, y_max = 32767;  // the output clamp: y's type range, or the op's y_min / y_max
  std::vector<float> mult;  // one per output channel: requant_multiplier(x_scale, w_scale[c], y_scale)
};

// nullopt when the node is outside what the kernels take (they then run on ref). `channels`:
// the dim of w that w_scale runs along (conv: dim 0, matmul: dim 1). `x_type`: the input's
// dtype as the plan knows it (kUndefined: the value's own type).
inline std::optional<W8A16Params> read_w8a16_params(const ir::Node& node, int channel_axis,
                                                    ir::DType x_type = ir::DType::kUndefined) {
  auto cst = [&](int i) -> const ir::Tensor* {
    const ir::Value* v = node.input(i);
    return v && v->constant ? &*v->constant : nullptr;
  };
  auto q16 = [](ir::DType t) { return t == ir::DType::kI16 || t == ir::DType::kU16; };
  if (node.num_inputs() < 8 || !node.input(0) || !node.input(7)) return std::nullopt;
  const ir::Tensor *xs = cst(1), *xz = cst(2), *w = cst(3), *ws = cst(4), *wz = cst(5), *ys = cst(6), *yz = cst(7);
  const ir::DType xt = x_type != ir::DType::kUndefined ? x_type : node.input(0)->type.dtype;
  if (!q16(xt) || !xs || !w || !ws || !ys || !yz || !q16(yz->dtype()) || yz->numel() != 1) return std::nullopt;
  if ((node.input(2) && (!xz || xz->dtype() != xt || xz->numel() != 1)) || (node.input(5) && !wz)) return std::nullopt;
  if (w->dtype() != ir::DType::kI8 || w->rank() <= channel_axis || w->numel() == 0) return std::nullopt;
  const int64_t channels = w->dim(channel_axis);
  if (xs->dtype() != ir::DType::kF32 || xs->numel() != 1 || ys->dtype() != ir::DType::kF32 || ys->numel() != 1 ||
      ws->dtype() != ir::DType::kF32 || (ws->numel() != 1 && ws->numel() != channels))
    return std::nullopt;
  if (wz) {
    if (wz->dtype() != ir::DType::kI8) return std::nullopt;
    for (int64_t i = 0; i < wz->numel(); ++i)
      if (wz->get_int(i) != 0) return std::nullopt;
  }
  W8A16Params p;
  p.w = w;
  p.x_unsigned = xt == ir::DType::kU16;
  p.y_unsigned = yz->dtype() == ir::DType::kU16;
  p.x_zp = xz ? static_cast<int32_t>(xz->get_int(0)) : 0;
  p.y_zp = static_cast<int32_t>(yz->get_int(0));
  const int64_t type_lo = p.y_unsigned ? 0 : -32768, type_hi = p.y_unsigned ? 65535 : 32767;
  const int64_t y_min = node.attrs.get_int("y_min", type_lo), y_max = node.attrs.get_int("y_max", type_hi);
  if (y_min < type_lo || y_max > type_hi || y_min > y_max) return std::nullopt;
  p.y_min = static_cast<int32_t>(y_min);
  p.y_max = static_cast<int32_t>(y_max);
  const float x_scale = xs->data<float>()[0], y_scale = ys->data<float>()[0];
  for (int64_t c = 0; c < channels; ++c) {
    const float m = nfuse::requant_multiplier(x_scale, ws->data<float>()[ws->numel() == 1 ? 0 : c], y_scale);
    if (!(m > 0.0f) || !std::isfinite(m)) return std::nullopt;  // the kernels' precondition
    p.mult.push_back(m);
  }
  return p;
}

// What the quantization fixes in the qs16 GEMM's arguments: A's and C's signedness, C's zero
// point and its clamp (the output type's range, or the op's y_min / y_max).
inline void set_qs16_quantization(const W8A16Params& p, kernels::Qs16GemmArgs* a) {
  a->a_unsigned = p.x_unsigned;
  a->c_unsigned = p.y_unsigned;
  a->c_zero_point = p.y_zp;
  a->qmin = p.y_min;
  a->qmax = p.y_max;
}

}  // namespace nfuse::backends::cpu
