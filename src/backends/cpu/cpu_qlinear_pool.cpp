// QLinearGlobalAveragePool (com.microsoft, channels_last = 0) on the cpu backend: one q8-rsum
// row sum per (n, c) plane, then kernels/quant_arithmetic.h's qlinear_average_value, so the result is
// bit-exact with ref_qlinear_pool.cpp (integer sums are exact in any order). Also MaxPool on u8 /
// i8 (what fuse_qdq_pool leaves of DQ -> MaxPool -> Q): separable row steps (kernels/q8-maxpool)
// over clipped windows, exact like any maximum, by ranges of output rows (q8_maxpool_rows, which
// the fusion backend's strips call too).
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "backends/cpu/cpu_pool_rows.h"
#include "backends/cpu/cpu_qlinear_ops.h"
#include "kernels/q8-maxpool/q8_maxpool.h"
#include "kernels/q8-rsum/q8_rsum.h"
#include "kernels/quant_arithmetic.h"
#include "ops/conv_geometry.h"

namespace nfuse::backends::cpu {
namespace {

constexpr size_t kPlanesPerTask = 16;

template <typename T>
class QLinearGlobalAveragePoolOp final : public CpuOp {
 public:
  QLinearGlobalAveragePoolOp(int64_t x_zp, int64_t y_zp, float m) : x_zp_(x_zp), y_zp_(y_zp), m_(m) {}

  Status run(const OpTensors& t, RunContext& rc) override {
    const ir::Tensor& x = *t.inputs[0];
    if (x.rank() < 2) return internal_error("QLinearGlobalAveragePool: input rank < 2 at run time");
    const size_t planes = static_cast<size_t>(x.dim(0) * x.dim(1));
    if (planes == 0) return ok_status();
    const size_t size = static_cast<size_t>(x.numel()) / planes;
    const T* in = x.data<T>();
    T* y = t.outputs[0]->data<T>();
    const auto& cfg = kernels::q8_rsum_config(kernels::selected_isa());
    rc.pool.run((planes + kPlanesPerTask - 1) / kPlanesPerTask, [&](size_t task, size_t) {
      const size_t end = std::min(planes, (task + 1) * kPlanesPerTask);
      for (size_t p = task * kPlanesPerTask; p < end; ++p) {
        int64_t s;
        if constexpr (std::is_same_v<T, uint8_t>) s = cfg.u8(in + p * size, size);
        else s = cfg.s8(in + p * size, size);
        const int64_t count = static_cast<int64_t>(size);
        y[p] = nfuse::qlinear_average_value<T>(s - count * x_zp_, count, m_, y_zp_);
      }
    });
    return ok_status();
  }

 private:
  int64_t x_zp_, y_zp_;
  float m_;
};

// MaxPool of a 4-D NCHW u8 / i8 tensor: q8_maxpool_rows over each whole plane.
template <typename T>
class MaxPool2dOp final : public CpuOp {
 public:
  explicit MaxPool2dOp(const ir::Node& node) : node_(node) {}

  size_t scratch_floats(const OpTensors& t, size_t) const override {
    auto g = ops::resolve_pool(node_.attrs, t.inputs[0]->dims());
    return g.ok() ? (q8_maxpool_buffer_bytes(plane_geometry(*g)) + sizeof(float) - 1) / sizeof(float) : 0;
  }

  Status run(const OpTensors& t, RunContext& rc) override {
    NFUSE_ASSIGN_OR_RETURN(ops::ConvGeometry cg, ops::resolve_pool(node_.attrs, t.inputs[0]->dims()));
    const PoolGeometry g = plane_geometry(cg);
    const T* x = t.inputs[0]->data<T>();
    T* y = t.outputs[0]->data<T>();
    const size_t planes = static_cast<size_t>(cg.batch * cg.in_channels);
    if (planes == 0 || g.ho == 0 || g.wo == 0) return ok_status();
    rc.pool.run(planes, [&](size_t p, size_t worker) {
      q8_maxpool_rows<T>(g, x + p * g.h * g.w, y + p * g.ho * g.wo, 0, g.ho, reinterpret_cast<T*>(rc.scratch.get(worker)));
    });
    return ok_status();
  }

 private:
  static PoolGeometry plane_geometry(const ops::ConvGeometry& g) {
    auto u = [](int64_t v) { return static_cast<size_t>(v); };
    PoolGeometry p;
    p.planes = 1, p.h = u(g.in[0]), p.w = u(g.in[1]), p.ho = u(g.out[0]), p.wo = u(g.out[1]);
    p.kh = u(g.kernel[0]), p.kw = u(g.kernel[1]), p.sh = u(g.strides[0]), p.sw = u(g.strides[1]);
    p.dh = u(g.dilations[0]), p.dw = u(g.dilations[1]), p.pad_top = u(g.pad_begin[0]), p.pad_left = u(g.pad_begin[1]);
    return p;
  }

  const ir::Node& node_;
};

// Taps t in [*lo, *hi) of a k-tap window with dilation d starting at `origin` that fall inside
// [0, size): the clipping is done once per window instead of once per tap.
inline void tap_range(int64_t origin, int64_t k, int64_t d, int64_t size, int64_t* lo, int64_t* hi) {
  *lo = origin >= 0 ? 0 : std::min(k, (-origin + d - 1) / d);
  *hi = origin > size - 1 ? 0 : std::min(k, (size - 1 - origin) / d + 1);
  *hi = std::max(*hi, *lo);
}

// Buffer entries one output row reads: from input column -pad_left to the last tap.
size_t row_width(const PoolGeometry& g) {
  return g.wo == 0 ? 0 : (g.wo - 1) * g.sw + (g.kw - 1) * g.dw + 1;
}

}  // namespace

size_t q8_maxpool_buffer_bytes(const PoolGeometry& g) { return row_width(g) + kernels::kQ8MaxPoolSlack; }

// Separably: per output row, the vertical maximum of the window's input rows goes into a padded
// row buffer (padding and rows outside the input hold the type's lowest value, which never wins
// against a real tap), then each output is the maximum of kw buffer entries (q8-maxpool's vmax /
// hmax; the buffer has kQ8MaxPoolSlack entries more for hmax's vector overreads). A window
// wholly in the padding (possible with dilations) gives the lowest value, as ref does.
template <typename T>
void q8_maxpool_rows(const PoolGeometry& g, const T* x, T* y, size_t y0, size_t y1, T* buf) {
  const int64_t h = static_cast<int64_t>(g.h), w = static_cast<int64_t>(g.w);
  const int64_t kh = static_cast<int64_t>(g.kh), sh = static_cast<int64_t>(g.sh), dh = static_cast<int64_t>(g.dh);
  const int64_t pt = static_cast<int64_t>(g.pad_top), pl = static_cast<int64_t>(g.pad_left);
  const int64_t width = static_cast<int64_t>(row_width(g));
  constexpr T kLowest = std::numeric_limits<T>::lowest();
  // Buffer entries [c0, c1) map to input columns [0, w); the rest is padding.
  const int64_t c0 = std::min(pl, width), c1 = std::min(pl + w, width);
  const auto& cfg = kernels::q8_maxpool_config(kernels::selected_isa());
  std::fill(buf, buf + c0, kLowest);
  std::fill(buf + c1, buf + width + static_cast<int64_t>(kernels::kQ8MaxPoolSlack), kLowest);
  for (size_t oy = y0; oy < y1; ++oy) {
    const int64_t top = static_cast<int64_t>(oy) * sh - pt;
    int64_t ky0, ky1;
    tap_range(top, kh, dh, h, &ky0, &ky1);
    if (ky0 == ky1) {
      std::fill(buf + c0, buf + c1, kLowest);
    } else {
      std::copy_n(x + (top + ky0 * dh) * w + (c0 - pl), c1 - c0, buf + c0);
      for (int64_t ky = ky0 + 1; ky < ky1; ++ky) {
        const T* row = x + (top + ky * dh) * w + (c0 - pl);
        if constexpr (std::is_same_v<T, uint8_t>) cfg.u8_vmax(buf + c0, row, static_cast<size_t>(c1 - c0));
        else cfg.s8_vmax(buf + c0, row, static_cast<size_t>(c1 - c0));
      }
    }
    T* out = y + oy * g.wo;
    if constexpr (std::is_same_v<T, uint8_t>) cfg.u8_hmax(buf, g.wo, g.kw, g.sw, g.dw, out);
    else cfg.s8_hmax(buf, g.wo, g.kw, g.sw, g.dw, out);
  }
}

template void q8_maxpool_rows<uint8_t>(const PoolGeometry&, const uint8_t*, uint8_t*, size_t, size_t, uint8_t*);
template void q8_maxpool_rows<int8_t>(const PoolGeometry&, const int8_t*, int8_t*, size_t, size_t, int8_t*);

Result<std::unique_ptr<CpuOp>> make_qlinear_pool(const ir::Node& node, const CompileContext&) {
  if (node.op_type == "MaxPool" && node.domain.empty()) {
    const ir::Value* x = node.input(0);
    if (!x || x->type.shape.rank() != 4 || node.attrs.get_int("storage_order", 0) != 0 ||
        (node.outputs.size() > 1 && node.outputs[1])) {
      return std::unique_ptr<CpuOp>();
    }
    if (x->type.dtype == ir::DType::kU8) return std::unique_ptr<CpuOp>(std::make_unique<MaxPool2dOp<uint8_t>>(node));
    if (x->type.dtype == ir::DType::kI8) return std::unique_ptr<CpuOp>(std::make_unique<MaxPool2dOp<int8_t>>(node));
    return std::unique_ptr<CpuOp>();
  }
  if (node.op_type != "QLinearGlobalAveragePool" || node.attrs.get_int("channels_last", 0) != 0) {
    return std::unique_ptr<CpuOp>();
  }
  const ir::Value* x = node.input(0);
  if (!x) return std::unique_ptr<CpuOp>();
  const ir::DType t = x->type.dtype;
  if (t != ir::DType::kU8 && t != ir::DType::kI8) return std::unique_ptr<CpuOp>();
  auto scalar = [](const ir::Value* v) -> const ir::Tensor* {
    return v && v->constant && v->constant->numel() == 1 ? &*v->constant : nullptr;
  };
  const ir::Tensor *xs = scalar(node.input(1)), *xz = scalar(node.input(2));
  const ir::Tensor *ys = scalar(node.input(3)), *yz = scalar(node.input(4));
  if (!xs || !xz || !ys || !yz || xs->dtype() != ir::DType::kF32 || ys->dtype() != ir::DType::kF32 ||
      xz->dtype() != t || yz->dtype() != t) {
    return std::unique_ptr<CpuOp>();
  }
  const float m = xs->data<float>()[0] / ys->data<float>()[0];  // as ref_qlinear_pool.cpp
  if (!std::isfinite(m)) return std::unique_ptr<CpuOp>();
  if (t == ir::DType::kU8) {
    return std::unique_ptr<CpuOp>(std::make_unique<QLinearGlobalAveragePoolOp<uint8_t>>(xz->get_int(0), yz->get_int(0), m));
  }
  return std::unique_ptr<CpuOp>(std::make_unique<QLinearGlobalAveragePoolOp<int8_t>>(xz->get_int(0), yz->get_int(0), m));
}

}  // namespace nfuse::backends::cpu
