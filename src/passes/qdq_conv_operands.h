// What the QDQ fusions of convolutions (fuse_qdq_conv, fuse_qdq_conv_transpose) read from a
// chain DQ(x) -> Conv-like op(DQ(w), bias) [-> Relu | Clip] -> Q: the bias as QLinearConv's int32
// B, and whether an activation is implied by the output quantization.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "passes/qdq_match.h"

namespace nfuse::passes {

// The int32 bias for `conv`'s optional input 2 (empty tensor when absent), nullopt when it is
// neither a DequantizeLinear of an int32 constant nor an f32 constant with one value per channel.
// *bias_dq: the bias's DequantizeLinear, if any; *as_is: its int32 input is B unchanged.
// `contrib_ok`: the bias's DequantizeLinear may also be a "com.microsoft" one (16-bit fusions).
std::optional<ir::Tensor> int32_bias(const ir::Node& conv, float x_scale, const std::vector<float>& w_scales,
                                     int64_t co, ir::Node** bias_dq, bool* as_is, bool contrib_ok);

// The range of quantized type t (u8, i8, u16, i16).
int64_t qmin_of(ir::DType t);
int64_t qmax_of(ir::DType t);

// The quantized bounds [Q(lo), Q(hi)] of the activation `act` (Relu or Clip with constant
// bounds): Q is monotone, so Q(act(c)) = clamp(Q(c), Q(lo), Q(hi)) exactly. nullopt when a bound
// is not constant.
std::optional<std::pair<int64_t, int64_t>> activation_bounds(const ir::Node& act, const QParams& y);

// True when `act` changes nothing after the output quantization: Q(lo) is the type minimum and
// Q(hi) the maximum.
bool activation_implied(const ir::Node& act, const QParams& y);

}  // namespace nfuse::passes
