// Reference Resize and Upsample, following the ONNX reference implementation: each axis maps an
// output coordinate to a fractional input coordinate (coordinate_transformation_mode), picks
// 1 (nearest), 2 (linear) or 4 (cubic) neighbours with weights, and the N-D result is the
// separable product of the per-axis taps. Neighbours outside the input repeat the edge.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"
#include "backends/ref/ref_util.h"

namespace nfuse::backends::ref {
namespace {

struct Settings {
  std::string mode;         // nearest, linear, cubic
  std::string ctm;          // coordinate_transformation_mode
  std::string nearest_mode;
  bool legacy = false;      // Upsample and Resize-10: asymmetric, nearest floors (ceils when shrinking)
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;
};

struct Tap {
  int64_t index;  // already clamped into [0, in_len)
  double weight;
};

// The taps of every output coordinate along one axis; `outside` marks tf_crop_and_resize
// coordinates that fall off the input and take the extrapolation value.
struct AxisTaps {
  std::vector<std::vector<Tap>> taps;
  std::vector<bool> outside;
};

double original_coordinate(const Settings& s, double x, int64_t in_len, double scale, double resized_len,
                           double roi_start, double roi_end) {
  const double in = static_cast<double>(in_len);
  if (s.legacy || s.ctm == "asymmetric") return x / scale;
  if (s.ctm == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (s.ctm == "pytorch_half_pixel") return resized_len > 1.0 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (s.ctm == "align_corners") return resized_len == 1.0 ? 0.0 : x * (in - 1.0) / (resized_len - 1.0);
  if (s.ctm == "tf_half_pixel_for_nearest") return (x + 0.5) / scale;
  // tf_crop_and_resize
  if (resized_len == 1.0) return (roi_end - roi_start) * (in - 1.0) / 2.0 + roi_start * (in - 1.0);
  return x * (roi_end - roi_start) * (in - 1.0) / (resized_len - 1.0) + roi_start * (in - 1.0);
}

int64_t nearest_index(const Settings& s, double xo, double scale) {
  if (s.legacy) return static_cast<int64_t>(scale < 1.0 ? std::ceil(xo) : std::floor(xo));
  const double fl = std::floor(xo);
  const double ratio = xo - fl;
  if (ratio == 0.0) return static_cast<int64_t>(fl);
  bool up = false;
  if (s.nearest_mode == "round_prefer_floor") up = ratio > 0.5;
  else if (s.nearest_mode == "round_prefer_ceil") up = ratio >= 0.5;
  else if (s.nearest_mode == "ceil") up = true;
  return static_cast<int64_t>(fl) + (up ? 1 : 0);
}

// Cubic convolution weights for the 4 neighbours at offsets -1, 0, 1, 2 from floor, with
// `ratio` the distance past floor in (0, 1].
std::vector<double> cubic_weights(double r, double a) {
  auto far = [a](double t) { return ((a * t - 5.0 * a) * t + 8.0 * a) * t - 4.0 * a; };  // 1 <= t <= 2
  auto near = [a](double t) { return ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0; };       // 0 <= t <= 1
  return {far(r + 1.0), near(r), near(1.0 - r), far(2.0 - r)};
}

AxisTaps axis_taps(const Settings& s, int64_t in_len, int64_t out_len, double scale, double resized_len,
                   double roi_start, double roi_end) {
  AxisTaps at;
  at.taps.resize(static_cast<size_t>(out_len));
  at.outside.assign(static_cast<size_t>(out_len), false);
  const auto clamp_index = [in_len](int64_t i) { return std::clamp<int64_t>(i, 0, in_len - 1); };
  for (int64_t x = 0; x < out_len; ++x) {
    const double xo = original_coordinate(s, static_cast<double>(x), in_len, scale, resized_len, roi_start, roi_end);
    auto& taps = at.taps[static_cast<size_t>(x)];
    if (!s.legacy && s.ctm == "tf_crop_and_resize" && (xo < 0.0 || xo > static_cast<double>(in_len - 1))) {
      at.outside[static_cast<size_t>(x)] = true;
      continue;
    }
    if (s.mode == "nearest") {
      taps.push_back({clamp_index(nearest_index(s, xo, scale)), 1.0});
      continue;
    }
    // The reference takes the ratio in (0, 1]: an exact coordinate is the right-hand neighbour.
    double fl = std::floor(xo);
    double ratio = xo - fl;
    if (ratio == 0.0) {
      ratio = 1.0;
      fl -= 1.0;
    }
    std::vector<double> w = s.mode == "cubic" ? cubic_weights(ratio, s.cubic_a) : std::vector<double>{1.0 - ratio, ratio};
    const int64_t first = static_cast<int64_t>(fl) - (s.mode == "cubic" ? 1 : 0);
    if (s.exclude_outside) {
      double sum = 0.0;
      for (size_t k = 0; k < w.size(); ++k) {
        const int64_t idx = first + static_cast<int64_t>(k);
        if (idx < 0 || idx >= in_len) w[k] = 0.0;
        sum += w[k];
      }
      if (sum != 0.0)
        for (double& v : w) v /= sum;
    }
    for (size_t k = 0; k < w.size(); ++k)
      if (w[k] != 0.0) taps.push_back({clamp_index(first + static_cast<int64_t>(k)), w[k]});
  }
  return at;
}

bool input_set(const KernelArgs& a, int i) { return i >= 0 && a.has_in(i) && a.in(i).numel() > 0; }

Settings read_settings(const KernelArgs& a, bool legacy) {
  Settings s;
  s.legacy = legacy;
  s.mode = a.attrs().get_string("mode", "nearest");
  if (s.mode == "bilinear") s.mode = "linear";
  s.ctm = a.attrs().get_string("coordinate_transformation_mode", "half_pixel");
  if (s.ctm == "tf_half_pixel_for_nn") s.ctm = "tf_half_pixel_for_nearest";  // its opset-11 draft name
  s.nearest_mode = a.attrs().get_string("nearest_mode", "round_prefer_floor");
  s.cubic_a = a.attrs().get_float("cubic_coeff_a", -0.75f);
  s.exclude_outside = a.attrs().get_int("exclude_outside", 0) != 0;
  s.extrapolation = a.attrs().get_float("extrapolation_value", 0.0f);
  return s;
}

// Integer outputs of linear/cubic interpolation round to nearest and saturate.
void store_value(ir::Tensor& out, int64_t i, double v) {
  const ir::DType t = out.dtype();
  if (ir::dtype_is_integer(t) && !std::isnan(v)) {
    v = std::nearbyint(v);
    double lo = 0.0, hi = 0.0;
    ir::visit_dtype(t, [&]<typename T>() {
      if constexpr (std::is_integral_v<T>) {
        lo = static_cast<double>(std::numeric_limits<T>::lowest());
        hi = static_cast<double>(std::numeric_limits<T>::max());
      }
    });
    v = std::clamp(v, lo, hi);
  }
  ir::store_from_double(t, out.raw(), i, v);
}

struct Accumulator {
  const std::vector<AxisTaps>& axes;
  const std::vector<double>& in;
  const std::vector<int64_t>& in_strides;
  const std::vector<int64_t>& out_index;

  double sum(size_t axis, int64_t offset) const {
    if (axis == axes.size()) return in[static_cast<size_t>(offset)];
    double acc = 0.0;
    for (const Tap& t : axes[axis].taps[static_cast<size_t>(out_index[axis])]) {
      acc += t.weight * sum(axis + 1, offset + t.index * in_strides[axis]);
    }
    return acc;
  }
};

Status resize_impl(KernelArgs& a, bool legacy, int roi_input, int scales_input, int sizes_input) {
  const ir::Tensor& x = a.in(0);
  ir::Tensor& y = a.out(0);
  const int rank = x.rank();
  if (y.rank() != rank) return a.error("output rank does not match input rank");
  const Settings s = read_settings(a, legacy);
  std::vector<double> scales(static_cast<size_t>(rank), 1.0);
  std::vector<double> resized(static_cast<size_t>(rank), 0.0);
  const bool by_sizes = input_set(a, sizes_input);
  std::vector<double> given;
  if (!by_sizes) {
    if (input_set(a, scales_input)) {
      for (int64_t i = 0; i < a.in(scales_input).numel(); ++i) given.push_back(a.in(scales_input).get_double(i));
    } else {
      for (float f : a.attrs().get_floats("scales")) given.push_back(f);
    }
    if (static_cast<int>(given.size()) != rank) return a.error("scales must have one entry per input dim");
  }
  std::vector<double> roi(static_cast<size_t>(2 * rank), 0.0);
  for (int i = 0; i < rank; ++i) roi[static_cast<size_t>(rank + i)] = 1.0;
  if (s.ctm == "tf_crop_and_resize" && input_set(a, roi_input)) {
    if (a.in(roi_input).numel() != 2 * rank) return a.error("roi must have 2 * rank elements");
    for (int i = 0; i < 2 * rank; ++i) roi[static_cast<size_t>(i)] = a.in(roi_input).get_double(i);
  }
  std::vector<AxisTaps> axes;
  for (int d = 0; d < rank; ++d) {
    const size_t ud = static_cast<size_t>(d);
    const int64_t in_len = x.dim(d), out_len = y.dim(d);
    if (out_len > 0 && in_len == 0) return a.error("cannot resize an empty dim to a non-empty one");
    // The reference measures the resized length as scale * input length, not the rounded size.
    const double scale = by_sizes ? static_cast<double>(out_len) / static_cast<double>(in_len) : given[ud];
    if (!(scale > 0.0) || !std::isfinite(scale)) return a.error("scales must be positive");
    const double resized_len = by_sizes ? static_cast<double>(out_len) : scale * static_cast<double>(in_len);
    axes.push_back(axis_taps(s, in_len, out_len, scale, resized_len, roi[ud], roi[ud + static_cast<size_t>(rank)]));
  }
  std::vector<double> in(static_cast<size_t>(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i) in[static_cast<size_t>(i)] = x.get_double(i);
  const std::vector<int64_t> in_strides = strides_of(x.dims());
  std::vector<int64_t> out_index(static_cast<size_t>(rank), 0);
  const Accumulator acc{axes, in, in_strides, out_index};
  for (int64_t i = 0; i < y.numel(); ++i) {
    bool outside = false;
    for (int d = 0; d < rank; ++d) outside = outside || axes[static_cast<size_t>(d)].outside[static_cast<size_t>(out_index[static_cast<size_t>(d)])];
    store_value(y, i, outside ? s.extrapolation : acc.sum(0, 0));
    for (int d = rank; d-- > 0;) {
      if (++out_index[static_cast<size_t>(d)] < y.dim(d)) break;
      out_index[static_cast<size_t>(d)] = 0;
    }
  }
  return ok_status();
}

Status resize(KernelArgs& a) {
  if (a.node.opset > 0 && a.node.opset < 11) return resize_impl(a, true, -1, 1, -1);
  return resize_impl(a, false, 1, 2, 3);
}

Status upsample(KernelArgs& a) { return resize_impl(a, true, -1, 1, -1); }

}  // namespace

void register_resize_kernels(KernelRegistry& registry) {
  registry.add("Resize", resize);
  registry.add("Upsample", upsample);
}

}  // namespace nfuse::backends::ref
