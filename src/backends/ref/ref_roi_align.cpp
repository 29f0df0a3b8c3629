// Reference RoiAlign, as onnxruntime defines it: each output bin averages (or, for "max", takes
// the largest weighted corner term of) a grid of bilinear samples, sampling_ratio per side or
// ceil(roi size / output size) when 0. Samples more than one pixel outside the map are 0;
// others clamp to the map. half_pixel shifts roi corners by -0.5 pixel; output_half_pixel
// instead makes rois at least 1x1. Computed in double.
#include <algorithm>
#include <cmath>
#include <string>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"

namespace nfuse::backends::ref {
namespace {

struct Sample {
  int64_t pos[4] = {0, 0, 0, 0};
  double w[4] = {0, 0, 0, 0};
};

Sample bilinear_sample(double y, double x, int64_t height, int64_t width) {
  Sample s;
  const double h = static_cast<double>(height), w = static_cast<double>(width);
  if (y < -1.0 || y > h || x < -1.0 || x > w) return s;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  int64_t y_low = static_cast<int64_t>(y), x_low = static_cast<int64_t>(x), y_high, x_high;
  if (y_low >= height - 1) y_high = y_low = height - 1, y = static_cast<double>(y_low);
  else y_high = y_low + 1;
  if (x_low >= width - 1) x_high = x_low = width - 1, x = static_cast<double>(x_low);
  else x_high = x_low + 1;
  const double ly = y - static_cast<double>(y_low), lx = x - static_cast<double>(x_low);
  const double hy = 1 - ly, hx = 1 - lx;
  s.pos[0] = y_low * width + x_low, s.pos[1] = y_low * width + x_high;
  s.pos[2] = y_high * width + x_low, s.pos[3] = y_high * width + x_high;
  s.w[0] = hy * hx, s.w[1] = hy * lx, s.w[2] = ly * hx, s.w[3] = ly * lx;
  return s;
}

Status roi_align(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  const ir::Tensor& rois = a.in(1);
  const ir::Tensor& batch = a.in(2);
  ir::Tensor& y = a.out(0);
  if (x.rank() != 4 || rois.rank() != 2 || rois.dim(1) != 4 || batch.numel() != rois.dim(0)) {
    return a.error("expects X [N, C, H, W], rois [R, 4] and batch_indices [R]");
  }
  const auto& attrs = a.attrs();
  const bool is_max = attrs.get_string("mode", "avg") == "max";
  const bool half_pixel = a.node.opset >= 16 &&
                          attrs.get_string("coordinate_transformation_mode", "half_pixel") == "half_pixel";
  const int64_t out_h = attrs.get_int("output_height", 1), out_w = attrs.get_int("output_width", 1);
  const int64_t ratio = attrs.get_int("sampling_ratio", 0);
  const double scale = attrs.get_float("spatial_scale", 1.0f);
  const int64_t n_batch = x.dim(0), channels = x.dim(1), height = x.dim(2), width = x.dim(3);
  const int64_t n_rois = rois.dim(0);
  if (y.numel() != n_rois * channels * out_h * out_w) return a.error("output size does not match");
  if (height == 0 || width == 0) return a.error("cannot pool an empty feature map");
  const double offset = half_pixel ? 0.5 : 0.0;
  for (int64_t r = 0; r < n_rois; ++r) {
    const int64_t b = batch.get_int(r);
    if (b < 0 || b >= n_batch) return a.error("batch index " + std::to_string(b) + " is out of range");
    const double x0 = rois.get_double(r * 4) * scale - offset, y0 = rois.get_double(r * 4 + 1) * scale - offset;
    const double x1 = rois.get_double(r * 4 + 2) * scale - offset, y1 = rois.get_double(r * 4 + 3) * scale - offset;
    double roi_w = x1 - x0, roi_h = y1 - y0;
    if (!half_pixel) roi_w = std::max(roi_w, 1.0), roi_h = std::max(roi_h, 1.0);
    if (!std::isfinite(roi_w) || !std::isfinite(roi_h)) return a.error("roi coordinates must be finite");
    const double bin_h = roi_h / static_cast<double>(out_h), bin_w = roi_w / static_cast<double>(out_w);
    // Adaptive sampling takes about one sample per pixel: bound it so a hostile roi cannot
    // overflow the count or loop for ever.
    constexpr double kMaxGrid = 1 << 16;
    const double adaptive_h = std::ceil(roi_h / static_cast<double>(out_h));
    const double adaptive_w = std::ceil(roi_w / static_cast<double>(out_w));
    if (ratio <= 0 && (adaptive_h > kMaxGrid || adaptive_w > kMaxGrid)) return a.error("roi is too large to sample");
    if (ratio > kMaxGrid) return a.error("sampling_ratio is too large");
    const int64_t grid_h = ratio > 0 ? ratio : static_cast<int64_t>(adaptive_h);
    const int64_t grid_w = ratio > 0 ? ratio : static_cast<int64_t>(adaptive_w);
    const double count = static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1));
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t base = (b * channels + c) * height * width;
      for (int64_t ph = 0; ph < out_h; ++ph) {
        for (int64_t pw = 0; pw < out_w; ++pw) {
          double acc = 0.0;
          bool first = true;
          for (int64_t iy = 0; iy < grid_h; ++iy) {
            const double sy = y0 + static_cast<double>(ph) * bin_h +
                              (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(grid_h);
            for (int64_t ix = 0; ix < grid_w; ++ix) {
              const double sx = x0 + static_cast<double>(pw) * bin_w +
                                (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(grid_w);
              const Sample s = bilinear_sample(sy, sx, height, width);
              if (is_max) {
                double v = s.w[0] * x.get_double(base + s.pos[0]);
                for (int k = 1; k < 4; ++k) v = std::max(v, s.w[k] * x.get_double(base + s.pos[k]));
                acc = first ? v : std::max(acc, v);
                first = false;
              } else {
                for (int k = 0; k < 4; ++k) acc += s.w[k] * x.get_double(base + s.pos[k]);
              }
            }
          }
          if (!is_max) acc /= count;
          ir::store_from_double(y.dtype(), y.raw(), ((r * channels + c) * out_h + ph) * out_w + pw, acc);
        }
      }
    }
  }
  return ok_status();
}

}  // namespace

void register_roi_align_kernels(KernelRegistry& registry) { registry.add("RoiAlign", roi_align); }

}  // namespace nfuse::backends::ref
