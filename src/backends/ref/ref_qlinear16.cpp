// Reference nfuse.QLinearConv16 and nfuse.QLinearMatMul16 (W8A16; definition in
// src/ops/qlinear16.cpp): int64 accumulation of zero-point-centred products, then
// kernels/quant_arithmetic.h's requantize_value with 16-bit storage. Written out here (not shared with
// ref_conv.cpp / ref_matmul.cpp) so it is a plain loop nest that tests can trust on its own.
#include <algorithm>
#include <string>
#include <vector>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"
#include "backends/ref/ref_nn_util.h"
#include "backends/ref/ref_util.h"
#include "kernels/quant_arithmetic.h"
#include "ops/conv_geometry.h"
#include "ops/matmul_geometry.h"

namespace nfuse::backends::ref {
namespace {

// Scale / zero point number `i` of a per-tensor (1 element) or per-channel input.
struct PerChannel {
  std::vector<float> scale;
  std::vector<int64_t> zp;  // empty: 0
  float s(int64_t i) const { return scale[scale.size() == 1 ? 0 : static_cast<size_t>(i)]; }
  int64_t z(int64_t i) const { return zp.empty() ? 0 : zp[zp.size() == 1 ? 0 : static_cast<size_t>(i)]; }
};

Result<PerChannel> params(const KernelArgs& a, int scale, int zp, int64_t channels, const char* what) {
  PerChannel p{a.in(scale).to_float_vector(), a.has_in(zp) ? to_int64s(a.in(zp)) : std::vector<int64_t>{}};
  const auto n = static_cast<int64_t>(p.scale.size());
  if ((n != 1 && n != channels) || (!p.zp.empty() && static_cast<int64_t>(p.zp.size()) != n)) {
    return a.error(std::string(what) + ": scale and zero point must have 1 or " + std::to_string(channels) +
                   " elements, the same for both");
  }
  return p;
}

// The y_min / y_max attributes (ops/qlinear16.cpp): the clamp after the requantization.
struct OutputClamp {
  int64_t lo, hi;
};
OutputClamp output_clamp(const KernelArgs& a) {
  const bool u16 = a.out(0).dtype() == ir::DType::kU16;
  return {a.attrs().get_int("y_min", u16 ? 0 : -32768), a.attrs().get_int("y_max", u16 ? 65535 : 32767)};
}

void store(ir::Tensor& out, size_t i, int64_t acc, float mult, int64_t zp, OutputClamp c) {
  if (out.dtype() == ir::DType::kI16) {
    out.data<int16_t>()[i] =
        static_cast<int16_t>(std::clamp<int64_t>(requantize_value<int16_t>(acc, mult, zp), c.lo, c.hi));
  } else {
    out.data<uint16_t>()[i] =
        static_cast<uint16_t>(std::clamp<int64_t>(requantize_value<uint16_t>(acc, mult, zp), c.lo, c.hi));
  }
}

// Inputs: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B.
Status qlinear_conv16(KernelArgs& a) {
  NFUSE_ASSIGN_OR_RETURN(ops::ConvGeometry g, ops::resolve_conv(a.attrs(), a.in(0).dims(), a.in(3).dims()));
  NFUSE_ASSIGN_OR_RETURN(PerChannel xq, params(a, 1, 2, 1, "x"));
  NFUSE_ASSIGN_OR_RETURN(PerChannel wq, params(a, 4, 5, g.out_channels, "w"));
  NFUSE_ASSIGN_OR_RETURN(PerChannel yq, params(a, 6, 7, 1, "y"));
  std::vector<int64_t> bias(static_cast<size_t>(g.out_channels), 0);
  if (a.has_in(8)) {
    if (a.in(8).numel() != g.out_channels) return a.error("B must have one element per output channel");
    bias = to_int64s(a.in(8));
  }
  const std::vector<int64_t> x = to_int64s(a.in(0)), w = to_int64s(a.in(3));
  const size_t r = static_cast<size_t>(g.rank());
  const int64_t in_size = product(g.in), out_size = product(g.out), taps = product(g.kernel);
  const int64_t cg = g.in_channels / g.group, mg = g.out_channels / g.group;
  const std::vector<int64_t> tap_index = all_indices(g.kernel), out_index = all_indices(g.out);
  const std::vector<int64_t> in_strides = strides_of(g.in.vector());
  ir::Tensor& out = a.out(0);
  const OutputClamp clamp = output_clamp(a);
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t m = 0; m < g.out_channels; ++m) {
      const int64_t c0 = (m / mg) * cg;
      const float mult = requant_multiplier(xq.s(0), wq.s(m), yq.s(0));
      for (int64_t o = 0; o < out_size; ++o) {
        int64_t acc = bias[static_cast<size_t>(m)];
        for (int64_t k = 0; k < taps; ++k) {
          int64_t offset = 0;
          bool inside = true;
          for (size_t d = 0; d < r && inside; ++d) {
            const int64_t p = out_index[static_cast<size_t>(o) * r + d] * g.strides[d] - g.pad_begin[d] +
                              tap_index[static_cast<size_t>(k) * r + d] * g.dilations[d];
            inside = p >= 0 && p < g.in[d];
            offset += p * in_strides[d];
          }
          if (!inside) continue;  // padding is the zero point: (x_zp - x_zp) * w = 0
          for (int64_t c = 0; c < cg; ++c) {
            const int64_t xv = x[static_cast<size_t>((n * g.in_channels + c0 + c) * in_size + offset)] - xq.z(0);
            const int64_t wv = w[static_cast<size_t>((m * cg + c) * taps + k)] - wq.z(m);
            acc += xv * wv;
          }
        }
        store(out, static_cast<size_t>((n * g.out_channels + m) * out_size + o), acc, mult, yq.z(0), clamp);
      }
    }
  }
  return ok_status();
}

// Inputs: a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point; b's scale
// and zero point per tensor or per column (N elements).
Status qlinear_matmul16(KernelArgs& a) {
  NFUSE_ASSIGN_OR_RETURN(ops::MatMulGeometry g, ops::resolve_matmul(a.in(0).dims(), a.in(3).dims()));
  NFUSE_ASSIGN_OR_RETURN(PerChannel aq, params(a, 1, 2, 1, "a"));
  NFUSE_ASSIGN_OR_RETURN(PerChannel bq, params(a, 4, 5, g.n, "b"));
  NFUSE_ASSIGN_OR_RETURN(PerChannel yq, params(a, 6, 7, 1, "y"));
  const std::vector<int64_t> av = to_int64s(a.in(0)), bv = to_int64s(a.in(3));
  ir::Tensor& out = a.out(0);
  const OutputClamp clamp = output_clamp(a);
  for (size_t bi = 0; bi < g.a_matrix.size(); ++bi) {
    const int64_t* am = av.data() + g.a_matrix[bi] * g.m * g.k;
    const int64_t* bm = bv.data() + g.b_matrix[bi] * g.k * g.n;
    for (int64_t i = 0; i < g.m; ++i) {
      for (int64_t j = 0; j < g.n; ++j) {
        int64_t acc = 0;
        for (int64_t kk = 0; kk < g.k; ++kk) acc += (am[i * g.k + kk] - aq.z(0)) * (bm[kk * g.n + j] - bq.z(j));
        store(out, static_cast<size_t>((static_cast<int64_t>(bi) * g.m + i) * g.n + j), acc,
              requant_multiplier(aq.s(0), bq.s(j), yq.s(0)), yq.z(0), clamp);
      }
    }
  }
  return ok_status();
}

}  // namespace

void register_qlinear16_kernels(KernelRegistry& registry) {
  registry.add("QLinearConv16", qlinear_conv16);
  registry.add("QLinearMatMul16", qlinear_matmul16);
}

}  // namespace nfuse::backends::ref
