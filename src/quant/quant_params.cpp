#include "quant/quant_params.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "quant/quant_math.h"

namespace nfuse::quant {
namespace {

bool usable_scale(float s) { return std::isfinite(s) && s >= std::numeric_limits<float>::min(); }

ir::QuantParams per_tensor(float scale, int64_t zero_point, ir::DType storage) {
  ir::QuantParams p;
  p.scale = {scale};
  p.zero_point = {zero_point};
  p.axis = -1;
  p.storage = storage;
  return p;
}

}  // namespace

Result<ActScheme> parse_act_scheme(std::string_view name) {
  if (name == "u8") return ActScheme::kU8Asymmetric;
  if (name == "s8") return ActScheme::kS8Symmetric;
  if (name == "s16") return ActScheme::kS16Symmetric;
  return invalid_argument("unknown activation scheme '" + std::string(name) + "' (expected u8, s8 or s16)");
}

ir::DType storage_of(ActScheme scheme) {
  switch (scheme) {
    case ActScheme::kU8Asymmetric: return ir::DType::kU8;
    case ActScheme::kS8Symmetric: return ir::DType::kI8;
    case ActScheme::kS16Symmetric: return ir::DType::kI16;
  }
  return ir::DType::kUndefined;
}

Result<ir::QuantParams> activation_params(Range range, ActScheme scheme) {
  if (!std::isfinite(range.min) || !std::isfinite(range.max) || range.min > range.max) {
    return invalid_argument("quantization range [" + std::to_string(range.min) + ", " + std::to_string(range.max) +
                            "] is not a finite, ordered range");
  }
  const ir::DType storage = storage_of(scheme);
  if (scheme == ActScheme::kU8Asymmetric) {
    const float lo = std::min(range.min, 0.0f);
    const float hi = std::max(range.max, 0.0f);
    const float scale = (hi - lo) / 255.0f;
    if (!usable_scale(scale)) {
      if (std::isinf(scale)) return invalid_argument("quantization range too wide for f32 scale");
      return per_tensor(1.0f, 0, storage);
    }
    float zp = std::nearbyint(0.0f - lo / scale);
    zp = std::clamp(zp, 0.0f, 255.0f);
    return per_tensor(scale, static_cast<int64_t>(zp), storage);
  }
  const float absmax = std::max(std::fabs(range.min), std::fabs(range.max));
  const float qmax = scheme == ActScheme::kS8Symmetric ? 127.0f : 32767.0f;
  const float scale = absmax / qmax;
  if (!usable_scale(scale)) return per_tensor(1.0f, 0, storage);
  return per_tensor(scale, 0, storage);
}

Result<QuantizedTensor> quantize_weights_per_channel(const ir::Tensor& w, int axis, std::span<const float> min_scale) {
  if (w.dtype() != ir::DType::kF32) {
    return unsupported("per-channel weight quantization takes f32 weights, got " + std::string(ir::dtype_name(w.dtype())));
  }
  if (w.rank() < 1) return invalid_argument("per-channel weight quantization needs rank >= 1");
  const int rank = w.rank();
  if (axis < -rank || axis >= rank) {
    return invalid_argument("axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  }
  if (axis < 0) axis += rank;
  const int64_t channels = w.dim(axis);
  int64_t inner = 1;
  for (int d = axis + 1; d < rank; ++d) inner *= w.dim(d);
  const int64_t outer = channels == 0 ? 0 : w.numel() / (channels * inner);
  const float* src = w.data<float>();

  std::vector<float> absmax(static_cast<size_t>(channels), 0.0f);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c = 0; c < channels; ++c) {
      const float* row = src + (o * channels + c) * inner;
      float& a = absmax[static_cast<size_t>(c)];
      for (int64_t i = 0; i < inner; ++i) {
        if (!std::isfinite(row[i])) {
          return invalid_argument("weight element " + std::to_string((o * channels + c) * inner + i) + " is not finite");
        }
        a = std::max(a, std::fabs(row[i]));
      }
    }
  }
  ir::QuantParams p;
  p.axis = axis;
  p.storage = ir::DType::kI8;
  p.scale.resize(static_cast<size_t>(channels));
  p.zero_point.assign(static_cast<size_t>(channels), 0);
  for (size_t c = 0; c < absmax.size(); ++c) {
    float s = absmax[c] / 127.0f;
    if (c < min_scale.size() && s < min_scale[c]) s = min_scale[c];
    p.scale[c] = usable_scale(s) ? s : 1.0f;
  }
  NFUSE_ASSIGN_OR_RETURN(ir::Tensor q, ir::Tensor::try_allocate(ir::DType::kI8, w.dims()));
  int8_t* dst = q.data<int8_t>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t base = (o * channels + c) * inner;
      const float s = p.scale[static_cast<size_t>(c)];
      for (int64_t i = 0; i < inner; ++i) {
        int8_t v = quantize_value<int8_t>(src[base + i], s, 0);
        dst[base + i] = std::max<int8_t>(v, -127);
      }
    }
  }
  return QuantizedTensor{std::move(q), std::move(p)};
}

Result<QuantizedBias> quantize_bias(const ir::Tensor& bias, float x_scale, std::span<const float> w_scale) {
  if (bias.dtype() != ir::DType::kF32) {
    return unsupported("bias quantization takes an f32 bias, got " + std::string(ir::dtype_name(bias.dtype())));
  }
  const int64_t n = bias.numel();
  if (w_scale.size() != 1 && static_cast<int64_t>(w_scale.size()) != n) {
    return invalid_argument("bias has " + std::to_string(n) + " elements but " + std::to_string(w_scale.size()) +
                            " weight scales");
  }
  ir::QuantParams p;
  p.storage = ir::DType::kI32;
  p.axis = w_scale.size() == 1 ? -1 : 0;
  for (float ws : w_scale) {
    const float s = x_scale * ws;
    if (!(std::isfinite(s) && s > 0.0f)) {
      return invalid_argument("bias scale " + std::to_string(x_scale) + " * " + std::to_string(ws) +
                              " is not positive and finite");
    }
    p.scale.push_back(s);
    p.zero_point.push_back(0);
  }
  NFUSE_ASSIGN_OR_RETURN(ir::Tensor q, ir::Tensor::try_allocate(ir::DType::kI32, bias.dims()));
  const float* src = bias.data<float>();
  int32_t* dst = q.data<int32_t>();
  int64_t saturated = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(src[i])) return invalid_argument("bias element " + std::to_string(i) + " is not finite");
    const float s = p.scale[p.scale.size() == 1 ? 0 : static_cast<size_t>(i)];
    int32_t v = quantize_value<int32_t>(src[i], s, 0);
    if (v == std::numeric_limits<int32_t>::max() || v == std::numeric_limits<int32_t>::lowest()) ++saturated;
    dst[i] = v;
  }
  QuantizedBias out;
  out.tensor = QuantizedTensor{std::move(q), std::move(p)};
  out.saturated = saturated;
  return out;
}

std::vector<float> int32_bias_min_weight_scale(std::span<const float> bias, float x_scale, int64_t k) {
  // Headroom: the accumulator's worst case, and a factor 2 for the bias's own rounding.
  const double limit = std::max(double{1 << 24}, (std::pow(2.0, 31) - 1.0 - static_cast<double>(k) * 255.0 * 128.0) / 2.0);
  std::vector<float> out;
  for (float b : bias) {
    const double need = std::fabs(static_cast<double>(b)) / (static_cast<double>(x_scale) * limit);
    out.push_back(static_cast<float>(need));
  }
  return out;
}

}  // namespace nfuse::quant
