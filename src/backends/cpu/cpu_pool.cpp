// MaxPool, AveragePool (2-D) and GlobalAveragePool on NCHW f32: one task per group of channel
// planes, direct loops over output rows [y0, y1) with the window clipped to the input.
#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/cpu/cpu_op.h"
#include "backends/cpu/cpu_pool_rows.h"
#include "ops/conv_geometry.h"

namespace nfuse::backends::cpu {
namespace {

// Taps t in [0, k) with 0 <= origin + t * d < size.
inline void tap_range(int64_t origin, size_t k, size_t d, size_t size, size_t* lo, size_t* hi) {
  const int64_t sd = static_cast<int64_t>(d), n = static_cast<int64_t>(size);
  int64_t a = origin >= 0 ? 0 : (-origin + sd - 1) / sd;
  int64_t b = origin > n - 1 ? 0 : (n - 1 - origin) / sd + 1;
  a = std::min<int64_t>(a, static_cast<int64_t>(k));
  b = std::clamp<int64_t>(b, a, static_cast<int64_t>(k));
  *lo = static_cast<size_t>(a);
  *hi = static_cast<size_t>(b);
}

// Output columns [ox_begin, ox_end) of output row oy, window by window, clipped to the input:
// the general path (borders, average pooling, any stride and dilation).
void pool_row_columns(PoolKind kind, bool count_pad, const PoolGeometry& g, const float* x, float* y, size_t oy,
                      size_t ox_begin, size_t ox_end) {
    const int64_t iy0 = static_cast<int64_t>(oy * g.sh) - static_cast<int64_t>(g.pad_top);
    size_t ky0, ky1;
    tap_range(iy0, g.kh, g.dh, g.h, &ky0, &ky1);
    for (size_t ox = ox_begin; ox < ox_end; ++ox) {
      const int64_t ix0 = static_cast<int64_t>(ox * g.sw) - static_cast<int64_t>(g.pad_left);
      size_t kx0, kx1;
      tap_range(ix0, g.kw, g.dw, g.w, &kx0, &kx1);
      if (kind == PoolKind::kMax) {
        float best = -std::numeric_limits<float>::infinity();
        for (size_t ky = ky0; ky < ky1; ++ky) {
          const float* row = x + (iy0 + static_cast<int64_t>(ky * g.dh)) * static_cast<int64_t>(g.w) + ix0 +
                             static_cast<int64_t>(kx0 * g.dw);
          for (size_t kx = 0; kx < kx1 - kx0; ++kx) {
            const float v = row[kx * g.dw];
            best = v > best ? v : best;  // NaN never wins, as in ref
          }
        }
        y[oy * g.wo + ox] = best;
      } else {
        double acc = 0;
        for (size_t ky = ky0; ky < ky1; ++ky) {
          const float* row = x + (iy0 + static_cast<int64_t>(ky * g.dh)) * static_cast<int64_t>(g.w) + ix0 +
                             static_cast<int64_t>(kx0 * g.dw);
          for (size_t kx = 0; kx < kx1 - kx0; ++kx) acc += row[kx * g.dw];
        }
        const size_t count = (ky1 - ky0) * (kx1 - kx0);
        y[oy * g.wo + ox] = static_cast<float>(acc / static_cast<double>(count_pad ? g.kh * g.kw : std::max<size_t>(count, 1)));
      }
    }
}

// Max pooling of output columns [ox0, ox1) of row `out`, whose windows lie inside the input
// columns, over input rows `ky0..ky1` of the window: tap by tap across the whole row segment, so
// the inner loop is a plain (stride S) sweep the compiler vectorises.
template <size_t S>
void max_interior(const PoolGeometry& g, const float* x, int64_t iy0, size_t ky0, size_t ky1, size_t ox0, size_t ox1,
                  float* out) {
  const size_t sw = S == 0 ? g.sw : S;
  for (size_t ox = ox0; ox < ox1; ++ox) out[ox] = -std::numeric_limits<float>::infinity();
  for (size_t ky = ky0; ky < ky1; ++ky) {
    const float* row = x + (iy0 + static_cast<int64_t>(ky * g.dh)) * static_cast<int64_t>(g.w);
    for (size_t kx = 0; kx < g.kw; ++kx) {
      const float* src = row + static_cast<int64_t>(kx * g.dw) - static_cast<int64_t>(g.pad_left);
      for (size_t ox = ox0; ox < ox1; ++ox) {
        const float v = src[ox * sw];
        out[ox] = v > out[ox] ? v : out[ox];  // NaN never wins, as in ref
      }
    }
  }
}

// Entries of the separable path's row buffer (on the stack); wider rows take the direct path.
constexpr size_t kSeparableRow = 2048;

template <size_t S>
void max_across(const float* buf, size_t wo, size_t kw, size_t sw_any, float* out) {
  const size_t sw = S == 0 ? sw_any : S;
  for (size_t ox = 0; ox < wo; ++ox) out[ox] = -std::numeric_limits<float>::infinity();
  for (size_t kx = 0; kx < kw; ++kx) {
    const float* src = buf + kx;
    for (size_t ox = 0; ox < wo; ++ox) {
      const float v = src[ox * sw];
      out[ox] = v > out[ox] ? v : out[ox];
    }
  }
}

// Max pooling without dilation, separably (as q8_maxpool_rows does for 8 bits): per output row,
// the maximum of the window's input rows into a row buffer whose padding holds -inf, then kw-wide
// maxima along it. kh + kw compares per output instead of kh * kw, and the borders need no
// clipped path: YOLO's SPPF 5x5 stride-1 pools on 128 x 20 x 20 ran 0.38 ms each window by
// window. Every fold is `v > m ? v : m` from -inf, so a NaN never wins, as in ref. False when
// the geometry is not for this path.
bool max_separable(const PoolGeometry& g, const float* x, float* y, size_t y0, size_t y1) {
  if (g.dh != 1 || g.dw != 1 || g.wo == 0) return false;
  const size_t width = (g.wo - 1) * g.sw + g.kw;  // buffer entry j is input column j - pad_left
  if (width > kSeparableRow) return false;
  alignas(64) float buf[kSeparableRow];
  constexpr float kLowest = -std::numeric_limits<float>::infinity();
  const size_t c0 = std::min(g.pad_left, width), c1 = std::min(g.pad_left + g.w, width);
  std::fill(buf, buf + c0, kLowest);
  std::fill(buf + c1, buf + width, kLowest);
  for (size_t oy = y0; oy < y1; ++oy) {
    const int64_t top = static_cast<int64_t>(oy * g.sh) - static_cast<int64_t>(g.pad_top);
    size_t ky0, ky1;
    tap_range(top, g.kh, 1, g.h, &ky0, &ky1);
    float* m = buf + c0;
    const size_t n = c1 - c0;
    std::fill(m, m + n, kLowest);
    for (size_t ky = ky0; ky < ky1; ++ky) {
      const float* row = x + (top + static_cast<int64_t>(ky)) * static_cast<int64_t>(g.w) +
                         static_cast<int64_t>(c0) - static_cast<int64_t>(g.pad_left);
      for (size_t j = 0; j < n; ++j) m[j] = row[j] > m[j] ? row[j] : m[j];
    }
    float* out = y + oy * g.wo;
    if (g.sw == 1) {
      max_across<1>(buf, g.wo, g.kw, 1, out);
    } else if (g.sw == 2) {
      max_across<2>(buf, g.wo, g.kw, 2, out);
    } else {
      max_across<0>(buf, g.wo, g.kw, g.sw, out);
    }
  }
  return true;
}

}  // namespace

void pool_rows(PoolKind kind, bool count_pad, const PoolGeometry& g, const float* x, float* y, size_t y0,
               size_t y1) {
  if (kind == PoolKind::kMax && max_separable(g, x, y, y0, y1)) return;
  // Output columns whose whole window is inside the input row: [ox_lo, ox_hi).
  const size_t span = (g.kw - 1) * g.dw + 1;
  const size_t ox_lo = std::min(g.wo, (g.pad_left + g.sw - 1) / g.sw);
  const size_t ox_hi = g.w + g.pad_left >= span ? std::clamp((g.w + g.pad_left - span) / g.sw + 1, ox_lo, g.wo) : ox_lo;
  for (size_t oy = y0; oy < y1; ++oy) {
    if (kind == PoolKind::kMax && ox_hi > ox_lo) {
      const int64_t iy0 = static_cast<int64_t>(oy * g.sh) - static_cast<int64_t>(g.pad_top);
      size_t ky0, ky1;
      tap_range(iy0, g.kh, g.dh, g.h, &ky0, &ky1);
      float* out = y + oy * g.wo;
      if (g.sw == 1) {
        max_interior<1>(g, x, iy0, ky0, ky1, ox_lo, ox_hi, out);
      } else if (g.sw == 2) {
        max_interior<2>(g, x, iy0, ky0, ky1, ox_lo, ox_hi, out);
      } else {
        max_interior<0>(g, x, iy0, ky0, ky1, ox_lo, ox_hi, out);
      }
    }
    pool_row_columns(kind, count_pad, g, x, y, oy, 0, kind == PoolKind::kMax ? ox_lo : g.wo);
    if (kind == PoolKind::kMax) pool_row_columns(kind, count_pad, g, x, y, oy, std::max(ox_lo, ox_hi), g.wo);
  }
}

namespace {

class PoolOp final : public CpuOp {
 public:
  PoolOp(const ir::Node& node, PoolKind kind, bool count_pad) : node_(node), kind_(kind), count_pad_(count_pad) {}

  Status run(const OpTensors& t, RunContext& rc) override {
    const ir::Tensor& xt = *t.inputs[0];
    if (xt.dims() != dims_) NFUSE_RETURN_IF_ERROR_PLAIN(resolve(xt.dims()));
    const float* x = xt.data<float>();
    float* y = t.outputs[0]->data<float>();
    const PoolGeometry& g = geo_;
    const size_t in_plane = g.h * g.w, out_plane = g.ho * g.wo;
    const size_t per_task = std::max<size_t>(1, 16384 / std::max<size_t>(in_plane, 1));
    auto task = [&](size_t i, size_t) {
      const size_t p0 = i * per_task, p1 = std::min(g.planes, p0 + per_task);
      for (size_t p = p0; p < p1; ++p) {
        const float* xp = x + p * in_plane;
        if (kind_ == PoolKind::kGlobalAverage) {
          // A whole plane, accumulated in double as the reference does, in 8 independent lanes
          // so the loop vectorises (a single double chain was 5% of MobileNetV3's time).
          double acc[8] = {};
          size_t j = 0;
          for (; j + 8 <= in_plane; j += 8)
            for (size_t l = 0; l < 8; ++l) acc[l] += xp[j + l];
          double s = 0;
          for (; j < in_plane; ++j) s += xp[j];
          for (double a : acc) s += a;
          y[p] = static_cast<float>(s / static_cast<double>(in_plane));
        } else {
          pool_rows(kind_, count_pad_, g, xp, y + p * out_plane, 0, g.ho);
        }
      }
    };
    rc.pool.run((g.planes + per_task - 1) / per_task, task);
    return ok_status();
  }

 private:
  Status resolve(const std::vector<int64_t>& dims) {
    PoolGeometry g;
    if (dims.size() != 4) return unsupported(node_.label() + ": cpu pooling expects 4-D input");
    g.planes = static_cast<size_t>(dims[0] * dims[1]);
    g.h = static_cast<size_t>(dims[2]);
    g.w = static_cast<size_t>(dims[3]);
    if (kind_ != PoolKind::kGlobalAverage) {
      NFUSE_ASSIGN_OR_RETURN(ops::ConvGeometry c, ops::resolve_pool(node_.attrs, dims));
      auto u = [](int64_t v) { return static_cast<size_t>(v); };
      g.ho = u(c.out[0]);
      g.wo = u(c.out[1]);
      g.kh = u(c.kernel[0]);
      g.kw = u(c.kernel[1]);
      g.sh = u(c.strides[0]);
      g.sw = u(c.strides[1]);
      g.dh = u(c.dilations[0]);
      g.dw = u(c.dilations[1]);
      g.pad_top = u(c.pad_begin[0]);
      g.pad_left = u(c.pad_begin[1]);
    }
    geo_ = g;
    dims_ = dims;
    return ok_status();
  }

  const ir::Node& node_;
  PoolKind kind_;
  bool count_pad_;
  std::vector<int64_t> dims_;
  PoolGeometry geo_;
};

}  // namespace

Result<std::unique_ptr<CpuOp>> make_pool(const ir::Node& node, const CompileContext&) {
  const ir::Value* x = node.input(0);
  if (!is_f32(x) || node.num_outputs() != 1 || x->type.shape.rank() != 4) return std::unique_ptr<CpuOp>();
  if (node.op_type == "GlobalAveragePool") {
    return std::unique_ptr<CpuOp>(std::make_unique<PoolOp>(node, PoolKind::kGlobalAverage, false));
  }
  if (node.op_type == "MaxPool") {
    if (node.attrs.get_int("storage_order", 0) != 0) return std::unique_ptr<CpuOp>();
    return std::unique_ptr<CpuOp>(std::make_unique<PoolOp>(node, PoolKind::kMax, false));
  }
  // AveragePool: count_include_pad divides by kh*kw, which is right only while every window
  // stays inside the padded input: not so in ceil_mode (nor for auto_pad SAME, whose pads the
  // reference treats as implicit); those run on the reference kernel.
  const bool count_pad = node.attrs.get_int("count_include_pad", 0) != 0;
  if (count_pad && (node.attrs.get_int("ceil_mode", 0) != 0 ||
                    node.attrs.get_string("auto_pad", "NOTSET") != "NOTSET")) {
    return std::unique_ptr<CpuOp>();
  }
  return std::unique_ptr<CpuOp>(std::make_unique<PoolOp>(node, PoolKind::kAverage, count_pad));
}

}  // namespace nfuse::backends::cpu
