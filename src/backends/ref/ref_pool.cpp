// Reference pooling: MaxPool (with Indices), AveragePool, LpPool and the Global* forms.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"
#include "backends/ref/ref_nn_util.h"
#include "backends/ref/ref_util.h"
#include "ops/conv_geometry.h"

namespace nfuse::backends::ref {
namespace {

// One tap of a window that lies inside the input: its offset within the (n, c) plane in
// row-major order and in column-major order (MaxPool's storage_order = 1).
struct Tap {
  int64_t row_major;
  int64_t col_major;
};

// Calls fn(plane, o, taps, padded) for every input plane (n * C + c) and output position o, where
// `taps` are the window taps inside the input and `padded` counts the taps in the explicit or
// SAME padding. Taps beyond the padding (which ceil_mode windows may reach) are in neither.
template <typename Fn>
void for_each_window(const ops::ConvGeometry& g, Fn&& fn) {
  const size_t r = static_cast<size_t>(g.rank());
  const int64_t out_size = product(g.out);
  const int64_t n_taps = product(g.kernel);
  const std::vector<int64_t> tap_index = all_indices(g.kernel);
  const std::vector<int64_t> out_index = all_indices(g.out);
  const std::vector<int64_t> row_strides = strides_of(g.in.vector());
  std::vector<int64_t> col_strides(r, 1);
  for (size_t d = 1; d < r; ++d) col_strides[d] = col_strides[d - 1] * g.in[d - 1];
  std::vector<Tap> taps;
  for (int64_t plane = 0; plane < g.batch * g.in_channels; ++plane) {
    for (int64_t o = 0; o < out_size; ++o) {
      taps.clear();
      int64_t padded = 0;
      for (int64_t k = 0; k < n_taps; ++k) {
        Tap tap{0, 0};
        bool inside = true;
        bool in_padding_range = true;
        for (size_t d = 0; d < r; ++d) {
          const int64_t p = out_index[static_cast<size_t>(o) * r + d] * g.strides[d] - g.pad_begin[d] +
                            tap_index[static_cast<size_t>(k) * r + d] * g.dilations[d];
          inside = inside && p >= 0 && p < g.in[d];
          in_padding_range = in_padding_range && p >= -g.pad_begin[d] && p < g.in[d] + g.pad_end[d];
          tap.row_major += p * row_strides[d];
          tap.col_major += p * col_strides[d];
        }
        if (inside) taps.push_back(tap);
        else if (in_padding_range) ++padded;
      }
      fn(plane, o, taps, padded);
    }
  }
}

// Max of each window; NaNs are skipped (as ONNX Runtime does). A window wholly in the padding
// (possible only with dilations) gives the dtype's lowest value and index -1.
Status max_pool(KernelArgs& a) {
  NFUSE_ASSIGN_OR_RETURN(ops::ConvGeometry g, ops::resolve_pool(a.attrs(), a.in(0).dims()));
  const std::vector<double> x = to_doubles(a.in(0));
  const int64_t in_size = product(g.in);
  const int64_t out_size = product(g.out);
  const bool col_major = a.attrs().get_int("storage_order", 0) == 1;
  const bool want_indices = a.num_outputs() > 1 && !a.out(1).empty();
  const double lowest = ir::dtype_is_float(a.in(0).dtype()) ? -std::numeric_limits<double>::infinity()
                        : a.in(0).dtype() == ir::DType::kI8 ? -128.0
                                                           : 0.0;
  std::vector<double> y(static_cast<size_t>(g.batch * g.in_channels * out_size));
  int64_t* indices = want_indices ? a.out(1).data<int64_t>() : nullptr;
  for_each_window(g, [&](int64_t plane, int64_t o, const std::vector<Tap>& taps, int64_t) {
    double best = lowest;
    int64_t best_index = -1;
    for (const Tap& t : taps) {
      const double v = x[static_cast<size_t>(plane * in_size + t.row_major)];
      if (best_index < 0 ? !std::isnan(v) : v > best) {
        best = v;
        best_index = plane * in_size + (col_major ? t.col_major : t.row_major);
      }
    }
    y[static_cast<size_t>(plane * out_size + o)] = best;
    if (indices) indices[plane * out_size + o] = best_index;
  });
  from_doubles(y, a.out(0));
  return ok_status();
}

// Mean of each window over the taps inside the input, or also over the padded taps when
// count_include_pad = 1. An empty window gives 0.
Status average_pool(KernelArgs& a) {
  NFUSE_ASSIGN_OR_RETURN(ops::ConvGeometry g, ops::resolve_pool(a.attrs(), a.in(0).dims()));
  const std::vector<double> x = to_doubles(a.in(0));
  const int64_t in_size = product(g.in);
  const int64_t out_size = product(g.out);
  const bool include_pad = a.attrs().get_int("count_include_pad", 0) == 1;
  std::vector<double> y(static_cast<size_t>(g.batch * g.in_channels * out_size));
  for_each_window(g, [&](int64_t plane, int64_t o, const std::vector<Tap>& taps, int64_t padded) {
    double sum = 0.0;
    for (const Tap& t : taps) sum += x[static_cast<size_t>(plane * in_size + t.row_major)];
    const int64_t count = static_cast<int64_t>(taps.size()) + (include_pad ? padded : 0);
    y[static_cast<size_t>(plane * out_size + o)] = count ? sum / static_cast<double>(count) : 0.0;
  });
  from_doubles(y, a.out(0));
  return ok_status();
}

double lp_norm(double sum_pow, double p) { return p == 1.0 ? sum_pow : std::pow(sum_pow, 1.0 / p); }

// (sum |x|^p)^(1/p) over each window; padding contributes zeros.
Status lp_pool(KernelArgs& a) {
  NFUSE_ASSIGN_OR_RETURN(ops::ConvGeometry g, ops::resolve_pool(a.attrs(), a.in(0).dims()));
  const std::vector<double> x = to_doubles(a.in(0));
  const double p = static_cast<double>(a.attrs().get_int("p", 2));
  const int64_t in_size = product(g.in);
  const int64_t out_size = product(g.out);
  std::vector<double> y(static_cast<size_t>(g.batch * g.in_channels * out_size));
  for_each_window(g, [&](int64_t plane, int64_t o, const std::vector<Tap>& taps, int64_t) {
    double sum = 0.0;
    for (const Tap& t : taps) sum += std::pow(std::fabs(x[static_cast<size_t>(plane * in_size + t.row_major)]), p);
    y[static_cast<size_t>(plane * out_size + o)] = lp_norm(sum, p);
  });
  from_doubles(y, a.out(0));
  return ok_status();
}

enum class GlobalKind { kAverage, kMax, kLp };

// Reduces every (n, c) plane of x to one value.
Status global_pool(KernelArgs& a, GlobalKind kind) {
  const ir::Tensor& xt = a.in(0);
  if (xt.rank() < 2) return a.error("input must have rank >= 2");
  const std::vector<double> x = to_doubles(xt);
  const int64_t planes = xt.dim(0) * xt.dim(1);
  const int64_t size = planes ? xt.numel() / planes : 0;
  const double p = static_cast<double>(a.attrs().get_int("p", 2));
  std::vector<double> y(static_cast<size_t>(planes));
  for (int64_t pl = 0; pl < planes; ++pl) {
    const double* v = x.data() + pl * size;
    double acc = kind == GlobalKind::kMax ? -std::numeric_limits<double>::infinity() : 0.0;
    for (int64_t i = 0; i < size; ++i) {
      if (kind == GlobalKind::kMax) acc = v[i] > acc ? v[i] : acc;  // NaNs skipped, as in MaxPool
      else if (kind == GlobalKind::kAverage) acc += v[i];
      else acc += std::pow(std::fabs(v[i]), p);
    }
    if (kind == GlobalKind::kAverage) acc = size ? acc / static_cast<double>(size) : 0.0;
    if (kind == GlobalKind::kLp) acc = lp_norm(acc, p);
    y[static_cast<size_t>(pl)] = acc;
  }
  from_doubles(y, a.out(0));
  return ok_status();
}

Status global_average_pool(KernelArgs& a) { return global_pool(a, GlobalKind::kAverage); }
Status global_max_pool(KernelArgs& a) { return global_pool(a, GlobalKind::kMax); }
Status global_lp_pool(KernelArgs& a) { return global_pool(a, GlobalKind::kLp); }

}  // namespace

}  // namespace nfuse::backends::ref

namespace nfuse::backends::ref {
namespace {

// MaxUnpool: y = 0 except y[pos(I[i])] = X[i], where I[i] is a flat index into the default
// output shape (the MaxPool input it came from) and pos places that multi-index into Y. With an
// output_shape larger than the default the extra positions stay zero (the ONNX test semantics);
// an index outside Y is an error, never a write out of bounds.
Status max_unpool(KernelArgs& a) {
  NFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> def, ops::max_unpool_default_dims(a.attrs(), a.in(0).dims()));
  const ir::Tensor& idx = a.in(1);
  if (idx.dims() != a.in(0).dims()) return a.error("indices must have the shape of X");
  ir::Tensor& out = a.out(0);
  const std::vector<int64_t> def_strides = strides_of(def);
  const std::vector<int64_t> out_strides = strides_of(out.dims());
  const int64_t def_size = product(def);
  const std::vector<double> x = to_doubles(a.in(0));
  std::vector<double> y(static_cast<size_t>(out.numel()), 0.0);
  for (size_t i = 0; i < x.size(); ++i) {
    int64_t flat = idx.get_int(static_cast<int64_t>(i));
    if (flat < 0 || flat >= def_size) return a.error("index " + std::to_string(flat) + " is out of range");
    int64_t offset = 0;
    for (size_t d = 0; d < def.size(); ++d) {
      const int64_t p = flat / def_strides[d];
      flat %= def_strides[d];
      if (p >= out.dim(static_cast<int>(d))) return a.error("an index falls outside output_shape");
      offset += p * out_strides[d];
    }
    y[static_cast<size_t>(offset)] = x[i];
  }
  from_doubles(y, out);
  return ok_status();
}

}  // namespace

void register_pool_kernels(KernelRegistry& registry) {
  registry.add("MaxPool", max_pool);
  registry.add("AveragePool", average_pool);
  registry.add("LpPool", lp_pool);
  registry.add("GlobalAveragePool", global_average_pool);
  registry.add("GlobalMaxPool", global_max_pool);
  registry.add("GlobalLpPool", global_lp_pool);
  registry.add("MaxUnpool", max_unpool);
}

}  // namespace nfuse::backends::ref
