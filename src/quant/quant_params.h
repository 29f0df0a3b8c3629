// From calibrated ranges and float weights to ir::QuantParams and quantized constants: the
// activation schemes `--act u8|s8` (and s16 for promoted layers) select, per-channel symmetric
// int8 weights and int32 biases. The arithmetic is quant_math.h's (nfuse's definition).
//
//   u8 asymmetric: the range is first widened to hold 0 (lo = min(lo, 0), hi = max(hi, 0)),
//                  scale = (hi - lo) / 255, zero_point = round_half_even(-lo / scale) clamped to
//                  [0, 255]; 0.0 then quantizes to zero_point and dequantizes to exactly 0.
//                  (ONNX / ORT compute_scale_zp with qmin 0, qmax 255.)
//   s8 symmetric:  zero_point 0, scale = max(|lo|, |hi|) / 127 (q in [-127, 127] for in-range x).
//   s16 symmetric: zero_point 0, scale = max(|lo|, |hi|) / 32767.
// Scales and zero points are computed in f32, as ORT does, so the two agree bit for bit. A range whose scale would not be a positive
// normal f32 (all-zero data, tiny ranges) gets scale 1 and zero point 0 (as ORT): every value
// still maps back near 0 and products with other scales stay normal.
#pragma once

#include <cstdint>
#include <span>

#include "ir/graph.h"
#include "ir/tensor.h"
#include "nfuse/status.h"
#include "quant/calib_method.h"

namespace nfuse::quant {

enum class ActScheme { kU8Asymmetric, kS8Symmetric, kS16Symmetric };

// "u8", "s8", "s16".
Result<ActScheme> parse_act_scheme(std::string_view name);
ir::DType storage_of(ActScheme scheme);

// Per-tensor parameters (axis -1, one scale, one zero point). Fails for non-finite or
// inverted ranges.
Result<ir::QuantParams> activation_params(Range range, ActScheme scheme);

struct QuantizedTensor {
  ir::Tensor data;  // i8 / i32 / u8, same dims as the float tensor (int4: packed, see below)
  ir::QuantParams params;
};

// Symmetric int8 per channel along `axis` (negative counts from the end): for each index c of
// that axis, scale[c] = absmax_c / 127 (1 when that would not be a positive normal f32, e.g. an
// all-zero channel), zero_point[c] = 0, q clamped to [-127, 127]. `w` must be f32 and finite.
// `min_scale` (empty, or one entry per channel) raises a channel's scale to at least that value
// (see int32_bias_min_weight_scale).
Result<QuantizedTensor> quantize_weights_per_channel(const ir::Tensor& w, int axis,
                                                     std::span<const float> min_scale = {});

// The smallest weight scale per channel that keeps a layer's int32 bias and accumulator exact:
// the integer kernels need |bias_q| + K * 255 * 128 < 2^31 (K = weight elements per channel),
// and bias_q = bias / (x_scale * w_scale). A channel whose weights are all near zero but whose
// bias is not (a pruned channel) would otherwise get a tiny scale and an int32 bias far out of
// range; raising its scale costs nothing (its weights round to about the same values). ONNX
// Runtime's quantizer makes the same adjustment.
std::vector<float> int32_bias_min_weight_scale(std::span<const float> bias, float x_scale, int64_t k);

// int32 bias: bias_scale[c] = x_scale * w_scale[c] (f32 product; w_scale has one entry or one per
// bias element), q = saturate_i32(round_half_even(b / bias_scale)). `saturated` counts entries
// that hit INT32_MIN/MAX (their float value is beyond what int32 holds at this scale). Fails
// when a bias scale is not positive and finite or the bias is not finite f32.
struct QuantizedBias {
  QuantizedTensor tensor;
  int64_t saturated = 0;
};
Result<QuantizedBias> quantize_bias(const ir::Tensor& bias, float x_scale, std::span<const float> w_scale);

}  // namespace nfuse::quant
