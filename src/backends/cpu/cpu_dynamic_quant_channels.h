// The prepacked side of a dynamically quantized MatMul or Conv (cpu_dynamic_quant_matmul.cpp,
// cpu_dynamic_quant_conv.cpp): the weights shifted to s8 (Bs = W - 128 for u8, W for s8: the
// qu8 GEMM multiplies u8 by s8, and x's zero point is known only per run, so no zero point is
// folded at pack time), packed by the ops, and per output channel j the column sum of Bs
// (packed here, through the PackStore like the panels), the offset
// c_j = (128 or 0) - w_zp[j] that multiplies x's row sums, the weight scale and the bias; and
// the per-run side, x quantized as DynamicQuantizeLinear does.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backends/cpu/cpu_op.h"
#include "backends/pack_store.h"
#include "ir/tensor.h"
#include "kernels/f32-qvcvt/f32_qvcvt.h"
#include "kernels/f32-rminmax/f32_rminmax.h"
#include "kernels/quant_arithmetic.h"

namespace nfuse::backends::cpu {

struct DynamicQuantChannels {
  std::vector<int64_t> offset;
  std::vector<float> scale, bias;
  bool any_offset = false;  // some c_j != 0: the epilogue needs x's row sums

  // w_zp and w_scale hold one element or one per channel, bias (optional) one per channel; `u8`:
  // the weights' type. The weights themselves are read only by pack_colsums and the callers'
  // packing (through the PackStore), so a context binary's canonical copy stays unread.
  DynamicQuantChannels(size_t channels, bool u8, const ir::Tensor& w_zp, const ir::Tensor& w_scale, const ir::Tensor* b)
      : offset(channels), scale(channels), bias(channels, 0.0f) {
    for (size_t j = 0; j < channels; ++j) {
      offset[j] = (u8 ? 128 : 0) - w_zp.get_int(w_zp.numel() == 1 ? 0 : static_cast<int64_t>(j));
      scale[j] = w_scale.data<float>()[w_scale.numel() == 1 ? 0 : j];
      if (b) bias[j] = b->data<float>()[j];
    }
    any_offset = std::any_of(offset.begin(), offset.end(), [](int64_t c) { return c != 0; });
  }

  // Bs, element i of w (s8 as it is, u8 minus 128).
  static int8_t shifted(const ir::Tensor& w, size_t i) {
    return w.dtype() == ir::DType::kU8 ? static_cast<int8_t>(w.data<uint8_t>()[i] - 128) : w.data<int8_t>()[i];
  }
  static std::vector<int8_t> shifted(const ir::Tensor& w) {
    std::vector<int8_t> out(static_cast<size_t>(w.numel()));
    for (size_t i = 0; i < out.size(); ++i) out[i] = shifted(w, i);
    return out;
  }

  // colsum(Bs)_j of weight `weight` (channel j's K weights at w[j * channel_stride + p * k_stride]),
  // through `packs` when given; false when memory runs out.
  bool pack_colsums(const ir::Value& weight, size_t k, size_t channel_stride, size_t k_stride, PackStore* packs) {
    const size_t channels = offset.size();
    const ir::Tensor& w = *weight.constant;
    auto fill = [&](float* dst) {
      auto* sums = reinterpret_cast<int64_t*>(dst);
      for (size_t j = 0; j < channels; ++j) {
        int64_t sum = 0;
        for (size_t p = 0; p < k; ++p) sum += shifted(w, j * channel_stride + p * k_stride);
        sums[j] = sum;
      }
    };
    auto key = [&] { return pack_key("q8.dyn.colsum", weight, {channels, k, channel_stride, k_stride}); };
    return pack_weights(packs, weight, key, 2 * channels, &colsums_, fill);
  }
  int64_t colsum(size_t j) const { return reinterpret_cast<const int64_t*>(colsums_.data())[j]; }

 private:
  PackedFloats colsums_;  // int64 per channel
};

// DynamicQuantizeLinear's u8 parameters of x[0, n): its range from the min/max kernel, one
// contiguous part per worker (the range does not depend on the order, f32_rminmax.h).
inline DynamicQuantParams dynamic_quant_params_parallel(const float* x, size_t n, ThreadPool& pool) {
  const kernels::F32MinMaxFn minmax = kernels::f32_rminmax_select(kernels::selected_isa());
  constexpr size_t kMinPart = 16384;  // below this a part's wake-up costs more than its scan
  constexpr size_t kMaxParts = 64;    // a scan at memory speed gains nothing from more
  const size_t parts = std::clamp<size_t>(std::min(pool.threads(), n / kMinPart), 1, kMaxParts);
  float lo = 0.0f, hi = 0.0f;
  if (parts == 1) {
    minmax(x, n, &lo, &hi);
  } else {
    std::array<float, 2 * kMaxParts> range{};  // no allocation per run
    const size_t step = (n + parts - 1) / parts;
    pool.run(parts, [&](size_t i, size_t) {
      const size_t b = std::min(n, i * step);
      minmax(x + b, std::min(step, n - b), &range[2 * i], &range[2 * i + 1]);
    });
    for (size_t i = 0; i < parts; ++i) lo = std::min(lo, range[2 * i]), hi = std::max(hi, range[2 * i + 1]);
  }
  return dynamic_quant_params(lo, hi);
}

// DynamicQuantizeLinear's u8 parameters of x[0, n), and x quantized with them into xq, in parts
// across the pool's workers (scale 0, an all-zero x, quantizes to zeros); after each part,
// on_part(begin, count, q) runs on the same worker while that part of xq is still in cache.
template <typename OnPart>
DynamicQuantParams quantize_dynamic_input(const float* x, size_t n, kernels::F32QuantizeFn quantize, ThreadPool& pool,
                                          uint8_t* xq, OnPart&& on_part) {
  const DynamicQuantParams q = dynamic_quant_params_parallel(x, n, pool);
  const kernels::F32QuantizeParams qp =
      q.scale != 0.0f ? kernels::f32_quantize_params(q.scale, q.zero_point, false) : kernels::F32QuantizeParams{};
  constexpr size_t kPart = 16384;
  pool.run((n + kPart - 1) / kPart, [&](size_t i, size_t) {
    const size_t b = i * kPart, len = std::min(kPart, n - b);
    if (q.scale == 0.0f) {
      std::memset(xq + b, 0, len);
    } else {
      quantize(x + b, len, qp, xq + b);
    }
    on_part(b, len, q);
  });
  return q;
}

inline DynamicQuantParams quantize_dynamic_input(const float* x, size_t n, kernels::F32QuantizeFn quantize,
                                                 ThreadPool& pool, uint8_t* xq) {
  return quantize_dynamic_input(x, n, quantize, pool, xq, [](size_t, size_t, const DynamicQuantParams&) {});
}

}  // namespace nfuse::backends::cpu
