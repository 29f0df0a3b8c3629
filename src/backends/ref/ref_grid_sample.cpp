// Reference GridSample (2-D), following onnxruntime's and the ONNX reference's definition:
// a normalised coordinate n maps to ((n + 1) / 2) * (L - 1) with align_corners, else
// ((n + 1) * L - 1) / 2. Nearest rounds half to even. Out-of-range coordinates are clamped
// (border) or reflected (reflection) before interpolation; pixels that the interpolation stencil
// reads outside the image are 0 (zeros), clamped (border) or reflected (reflection).
// Bicubic uses the cubic convolution kernel with A = -0.75. Computed in double.
#include <algorithm>
#include <cmath>
#include <string>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"

namespace nfuse::backends::ref {
namespace {

enum class Padding { kZeros, kBorder, kReflection };

// Reflects x into [lo, hi] by the nearer border until it lies inside (the ONNX reference's
// repeated reflection, as one fmod so huge coordinates cost nothing).
double reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo) {
    const double m = std::fmod(lo - x, 2 * range);
    return m < range ? lo + m : hi - (m - range);
  }
  if (x > hi) {
    const double m = std::fmod(x - hi, 2 * range);
    return m < range ? hi - m : lo + (m - range);
  }
  return x;
}

struct Plane {
  const ir::Tensor* x;
  int64_t base, h, w;
  Padding padding;
  double border[4];  // x_min, y_min, x_max, y_max

  double at(int64_t r, int64_t c) const {
    if (padding == Padding::kZeros) {
      if (r < 0 || r >= h || c < 0 || c >= w) return 0.0;
    } else if (padding == Padding::kBorder) {
      c = std::clamp<int64_t>(c, 0, w - 1);
      r = std::clamp<int64_t>(r, 0, h - 1);
    } else {
      c = static_cast<int64_t>(reflect(static_cast<double>(c), border[0], border[2]));
      r = static_cast<int64_t>(reflect(static_cast<double>(r), border[1], border[3]));
      c = std::clamp<int64_t>(c, 0, w - 1);  // guards degenerate ranges; reflect() stays inside
      r = std::clamp<int64_t>(r, 0, h - 1);
    }
    return x->get_double(base + r * w + c);
  }
};

void cubic_coeffs(double t, double c[4]) {
  constexpr double A = -0.75;
  t = std::fabs(t);
  c[0] = ((A * (t + 1) - 5 * A) * (t + 1) + 8 * A) * (t + 1) - 4 * A;
  c[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
  c[2] = ((A + 2) * (1 - t) - (A + 3)) * (1 - t) * (1 - t) + 1;
  c[3] = ((A * (2 - t) - 5 * A) * (2 - t) + 8 * A) * (2 - t) - 4 * A;
}

double denormalize(double n, int64_t length, bool align_corners) {
  const double l = static_cast<double>(length);
  return align_corners ? (n + 1) / 2 * (l - 1) : ((n + 1) * l - 1) / 2;
}

Status grid_sample(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  const ir::Tensor& grid = a.in(1);
  ir::Tensor& y = a.out(0);
  if (x.rank() != 4 || grid.rank() != 4 || grid.dim(3) != 2 || grid.dim(0) != x.dim(0)) {
    return a.error("expects X [N, C, H, W] and grid [N, H_out, W_out, 2]");
  }
  const std::string mode = a.attrs().get_string("mode", "bilinear");
  const std::string pad = a.attrs().get_string("padding_mode", "zeros");
  const bool align = a.attrs().get_int("align_corners", 0) != 0;
  const int64_t n_batch = x.dim(0), channels = x.dim(1), h_in = x.dim(2), w_in = x.dim(3);
  const int64_t h_out = grid.dim(1), w_out = grid.dim(2);
  if (y.numel() != n_batch * channels * h_out * w_out) return a.error("output size does not match");
  if (h_in == 0 || w_in == 0) return a.error("cannot sample an empty image");
  Plane p{&x, 0, h_in, w_in, pad == "border" ? Padding::kBorder : pad == "reflection" ? Padding::kReflection : Padding::kZeros,
          {}};
  const double x_min = align ? 0.0 : -0.5, y_min = x_min;
  const double x_max = align ? static_cast<double>(w_in - 1) : static_cast<double>(w_in) - 0.5;
  const double y_max = align ? static_cast<double>(h_in - 1) : static_cast<double>(h_in) - 0.5;
  p.border[0] = x_min, p.border[1] = y_min, p.border[2] = x_max, p.border[3] = y_max;
  const bool nearest = mode == "nearest";
  const bool cubic = mode == "bicubic" || mode == "cubic";
  for (int64_t n = 0; n < n_batch; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      p.base = (n * channels + c) * h_in * w_in;
      for (int64_t oy = 0; oy < h_out; ++oy) {
        for (int64_t ox = 0; ox < w_out; ++ox) {
          const int64_t gi = ((n * h_out + oy) * w_out + ox) * 2;
          double gx = denormalize(grid.get_double(gi), w_in, align);
          double gy = denormalize(grid.get_double(gi + 1), h_in, align);
          if (nearest) gx = std::nearbyint(gx), gy = std::nearbyint(gy);
          if (gx < x_min || gx > x_max || gy < y_min || gy > y_max) {
            if (p.padding == Padding::kBorder) {
              gx = std::clamp(gx, 0.0, static_cast<double>(w_in - 1));
              gy = std::clamp(gy, 0.0, static_cast<double>(h_in - 1));
            } else if (p.padding == Padding::kReflection) {
              gx = reflect(gx, x_min, x_max);
              gy = reflect(gy, y_min, y_max);
            } else {
              // Every tap of a far-away point reads padding: pull it in (still outside) so the
              // integer tap positions below stay representable.
              gx = std::clamp(gx, -8.0, static_cast<double>(w_in) + 8.0);
              gy = std::clamp(gy, -8.0, static_cast<double>(h_in) + 8.0);
            }
          }
          double v = 0.0;
          if (!std::isfinite(gx) || !std::isfinite(gy)) {
            v = p.padding == Padding::kZeros ? 0.0 : std::nan("");
          } else if (nearest) {
            v = p.at(static_cast<int64_t>(gy), static_cast<int64_t>(gx));
          } else if (!cubic) {
            const int64_t x1 = static_cast<int64_t>(std::floor(gx)), y1 = static_cast<int64_t>(std::floor(gy));
            const double dx1 = gx - static_cast<double>(x1), dx2 = 1 - dx1;
            const double dy1 = gy - static_cast<double>(y1), dy2 = 1 - dy1;
            v = dy2 * (dx2 * p.at(y1, x1) + dx1 * p.at(y1, x1 + 1)) +
                dy1 * (dx2 * p.at(y1 + 1, x1) + dx1 * p.at(y1 + 1, x1 + 1));
          } else {
            const int64_t x0 = static_cast<int64_t>(std::floor(gx)) - 1, y0 = static_cast<int64_t>(std::floor(gy)) - 1;
            double cx[4], cy[4];
            cubic_coeffs(gx - static_cast<double>(x0) - 1, cx);
            cubic_coeffs(gy - static_cast<double>(y0) - 1, cy);
            for (int64_t i = 0; i < 4; ++i) {
              double row = 0.0;
              for (int64_t j = 0; j < 4; ++j) row += cx[j] * p.at(y0 + i, x0 + j);
              v += cy[i] * row;
            }
          }
          ir::store_from_double(y.dtype(), y.raw(), ((n * channels + c) * h_out + oy) * w_out + ox, v);
        }
      }
    }
  }
  return ok_status();
}

}  // namespace

void register_grid_sample_kernels(KernelRegistry& registry) { registry.add("GridSample", grid_sample); }

}  // namespace nfuse::backends::ref
