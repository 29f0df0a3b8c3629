// Reference QLinearGlobalAveragePool and QLinearAveragePool (com.microsoft): an exact integer sum
// of (x - x_zp) over each window (int64), requantized by qlinear_average_value (kernels/quant_arithmetic.h).
// channels_last = 1 inputs are viewed as NC... by index arithmetic; the output keeps the layout.
#include <cstdint>
#include <vector>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"
#include "backends/ref/ref_nn_util.h"
#include "backends/ref/ref_util.h"
#include "kernels/quant_arithmetic.h"
#include "ops/conv_geometry.h"

namespace nfuse::backends::ref {
namespace {

struct PoolQ {
  int64_t x_zp = 0, y_zp = 0;
  float m = 1.0f;  // x_scale / y_scale
};

Result<PoolQ> pool_q(const KernelArgs& a) {
  for (int i : {1, 2, 3, 4}) {
    if (a.has_in(i) && a.in(i).numel() != 1) return a.error("scales and zero points must be scalars");
  }
  PoolQ q;
  q.x_zp = a.has_in(2) ? a.in(2).get_int(0) : 0;
  q.y_zp = a.has_in(4) ? a.in(4).get_int(0) : 0;
  q.m = a.in(1).data<float>()[0] / a.in(3).data<float>()[0];
  return q;
}

// Dims [N, C, spatial...] of a tensor in either layout, and the element strides of those axes.
struct NcView {
  std::vector<int64_t> dims, strides;
};
NcView nc_view(const std::vector<int64_t>& d, bool channels_last) {
  NcView v{d, strides_of(d)};
  if (channels_last) {
    const std::vector<int64_t> s = strides_of(d);
    v.dims = {d[0], d.back()};
    v.strides = {s[0], s.back()};
    for (size_t i = 1; i + 1 < d.size(); ++i) {
      v.dims.push_back(d[i]);
      v.strides.push_back(s[i]);
    }
  }
  return v;
}

template <typename Q>
Status average_pool(const KernelArgs& a, const PoolQ& q, bool global) {
  const bool channels_last = a.attrs().get_int("channels_last", 0) == 1;
  const NcView xv = nc_view(a.in(0).dims(), channels_last);
  const NcView yv = nc_view(a.out(0).dims(), channels_last);
  ops::ConvGeometry g;
  if (global) {
    g.batch = xv.dims[0];
    g.in_channels = xv.dims[1];
    g.in.assign(xv.dims.begin() + 2, xv.dims.end());
    g.kernel = g.in;
    g.out.assign(g.in.size(), 1);
    g.strides = g.dilations = g.out;
    g.pad_begin = g.pad_end = std::vector<int64_t>(g.in.size(), 0);
  } else {
    NFUSE_ASSIGN_OR_RETURN(g, ops::resolve_pool(a.attrs(), xv.dims));
  }
  const bool include_pad = a.attrs().get_int("count_include_pad", 0) == 1;
  const size_t r = g.in.size();
  const std::vector<int64_t> out_index = all_indices(g.out);
  const std::vector<int64_t> tap_index = all_indices(g.kernel);
  const int64_t out_size = product(g.out), n_taps = product(g.kernel);
  const Q* x = a.in(0).data<Q>();
  Q* y = a.out(0).data<Q>();
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t c = 0; c < g.in_channels; ++c) {
      const int64_t x_base = n * xv.strides[0] + c * xv.strides[1];
      int64_t y_base = n * yv.strides[0] + c * yv.strides[1];
      for (int64_t o = 0; o < out_size; ++o) {
        int64_t acc = 0, count = 0;
        for (int64_t k = 0; k < n_taps; ++k) {
          int64_t off = x_base;
          bool inside = true, in_pad_range = true;
          for (size_t d = 0; d < r; ++d) {
            const int64_t p = out_index[static_cast<size_t>(o) * r + d] * g.strides[d] - g.pad_begin[d] +
                              tap_index[static_cast<size_t>(k) * r + d] * g.dilations[d];
            inside = inside && p >= 0 && p < g.in[d];
            in_pad_range = in_pad_range && p >= -g.pad_begin[d] && p < g.in[d] + g.pad_end[d];
            off += p * xv.strides[d + 2];
          }
          if (inside) {
            acc += static_cast<int64_t>(x[off]) - q.x_zp;
            ++count;
          } else if (in_pad_range && include_pad) {
            ++count;
          }
        }
        int64_t yo = y_base;
        for (size_t d = 0; d < r; ++d) yo += out_index[static_cast<size_t>(o) * r + d] * yv.strides[d + 2];
        y[yo] = qlinear_average_value<Q>(acc, count, q.m, q.y_zp);
      }
    }
  }
  return ok_status();
}

template <bool kGlobal>
Status qlinear_pool(KernelArgs& a) {
  NFUSE_ASSIGN_OR_RETURN(PoolQ q, pool_q(a));
  if (a.in(0).rank() < (kGlobal ? 2 : 3)) return a.error("input rank is too small");
  if (a.in(0).dtype() == ir::DType::kU8) return average_pool<uint8_t>(a, q, kGlobal);
  return average_pool<int8_t>(a, q, kGlobal);
}

}  // namespace

void register_qlinear_pool_kernels(KernelRegistry& registry) {
  registry.add("QLinearGlobalAveragePool", qlinear_pool<true>);
  registry.add("QLinearAveragePool", qlinear_pool<false>);
}

}  // namespace nfuse::backends::ref
