// Resize (opset >= 11) of 4-D NCHW tensors that scales only H and W: f32 nearest (every
// nearest_mode) and linear, and 8- and 16-bit integer nearest (what fuse_qdq_resize leaves of an
// FPN's DQ -> Resize -> Q, in int8 and W8A16 graphs; a gather of bytes or 16-bit words), every
// coordinate_transformation_mode but tf_crop_and_resize (and tf_half_pixel_for_nearest where it
// would shift N and C, as the reference does). The per-row and per-column source indices and
// weights follow ref_resize.cpp exactly (computed in double once per shape and cached); the run
// is then a gather (nearest; where output column c reads input column c / f, a repetition of
// each value f times) or two horizontal passes plus one vertical blend (linear) per output row,
// parallel over channel planes. Horizontal passes are cached per source row, so an upscale
// computes each source row's blend once. Shapes the fast path does not cover at run time (a
// scale on N or C, from dynamic scales) go to the reference kernel, which this op holds.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/cpu_op.h"
#include "backends/cpu/cpu_resize_map.h"

namespace nfuse::backends::cpu {
namespace {

struct Geometry {
  std::vector<int64_t> in_dims, out_dims;
  double scale_h = 0, scale_w = 0;
  ResizeAxisMap rows, cols;
  // f when output column c reads input column c / f for every c (an integer upsampling, whatever
  // the coordinate mode made of it), else 0: the row is then a repetition, not a gather.
  size_t col_repeat = 0;
};

size_t column_repeat(const ResizeAxisMap& cols, size_t iw, size_t ow) {
  if (iw == 0 || ow % iw != 0) return 0;
  const size_t f = ow / iw;
  for (size_t c = 0; c < ow; ++c)
    if (static_cast<size_t>(cols.i0[c]) != c / f) return 0;
  return f;
}

class ResizeOp final : public CpuOp {
 public:
  ResizeOp(const ResizeMode& mode, size_t elem, std::unique_ptr<CpuOp> fallback)
      : mode_(mode), elem_(elem), fallback_(std::move(fallback)) {}

  size_t scratch_floats(const OpTensors& t, size_t) const override {
    if (!mode_.linear) return 0;
    if (t.outputs.empty() || !t.outputs[0]) return 2 * scratch_width_;  // compile time: the static width
    const ir::Tensor& y = *t.outputs[0];
    return y.rank() == 4 ? 2 * static_cast<size_t>(y.dim(3)) : 0;
  }

  // By output elements: a linear one reads four inputs and weighs them, which costs about as
  // much as a few dozen multiply-adds of a convolution (memory, not arithmetic, bounds it).
  size_t pieces(const OpTensors& t, size_t threads) const override {
    const double elements = static_cast<double>(t.outputs[0]->numel());
    const size_t planes = static_cast<size_t>(std::max<int64_t>(1, t.outputs[0]->dim(0) * t.outputs[0]->dim(1)));
    // A task is a plane: no more pieces than planes (a piece of 3 planes is then a third).
    return std::min(planes, pieces_for_work(elements * (mode_.linear ? kLinearWork : kNearestWork), threads));
  }

  Status run(const OpTensors& t, RunContext& rc) override {
    const ir::Tensor& x = *t.inputs[0];
    ir::Tensor& y = *t.outputs[0];
    double sh = 0, sw = 0;
    // Off the fast path (decided by the same inputs in every piece), the first piece runs it all.
    if (!fast_path(t, &sh, &sw)) return rc.piece == 0 ? fallback_->run(t, rc) : ok_status();
    if (geo_.in_dims != x.dims() || geo_.out_dims != y.dims() || geo_.scale_h != sh || geo_.scale_w != sw) {
      geo_.in_dims = x.dims();
      geo_.out_dims = y.dims();
      geo_.scale_h = sh;
      geo_.scale_w = sw;
      geo_.rows = resize_axis_map(mode_, x.dim(2), y.dim(2), sh, by_sizes_);
      geo_.cols = resize_axis_map(mode_, x.dim(3), y.dim(3), sw, by_sizes_);
      geo_.col_repeat =
          mode_.linear ? 0 : column_repeat(geo_.cols, static_cast<size_t>(x.dim(3)), static_cast<size_t>(y.dim(3)));
    }
    const size_t planes = static_cast<size_t>(x.dim(0) * x.dim(1));
    const size_t ih = static_cast<size_t>(x.dim(2)), iw = static_cast<size_t>(x.dim(3));
    const size_t oh = static_cast<size_t>(y.dim(2)), ow = static_cast<size_t>(y.dim(3));
    if (planes == 0 || oh == 0 || ow == 0) return ok_status();
    const Geometry& g = geo_;
    auto task = [&](size_t p, size_t worker) {
      if (elem_ == 1) {
        run_nearest_plane(g, static_cast<const uint8_t*>(x.raw()) + p * ih * iw, iw,
                          static_cast<uint8_t*>(y.raw()) + p * oh * ow, oh, ow);
        return;
      }
      if (elem_ == 2) {
        run_nearest_plane(g, static_cast<const uint16_t*>(x.raw()) + p * ih * iw, iw,
                          static_cast<uint16_t*>(y.raw()) + p * oh * ow, oh, ow);
        return;
      }
      const float* src = x.data<float>() + p * ih * iw;
      float* dst = y.data<float>() + p * oh * ow;
      if (mode_.linear) {
        run_linear_plane(g, src, iw, dst, oh, ow, rc.scratch.get(worker));
      } else {
        run_nearest_plane(g, src, iw, dst, oh, ow);
      }
    };
    rc.run_tasks(planes, task);
    return ok_status();
  }

  void set_scratch_width(size_t ow) { scratch_width_ = ow; }

 private:
  static constexpr double kLinearWork = 16, kNearestWork = 4;  // multiply-adds per output element

  // True when the run-time inputs scale only H and W; the per-axis scales as the reference
  // measures them.
  bool fast_path(const OpTensors& t, double* sh, double* sw) {
    const ir::Tensor& x = *t.inputs[0];
    const ir::Tensor& y = *t.outputs[0];
    if (x.rank() != 4 || y.rank() != 4 || x.dim(0) != y.dim(0) || x.dim(1) != y.dim(1)) return false;
    if (x.dim(2) == 0 || x.dim(3) == 0) return false;
    auto set = [&](int i) {
      return i < static_cast<int>(t.inputs.size()) && t.inputs[static_cast<size_t>(i)] &&
             t.inputs[static_cast<size_t>(i)]->numel() > 0;
    };
    by_sizes_ = set(kResizeSizesInput);
    const ir::Tensor* scales = set(kResizeScalesInput) ? t.inputs[static_cast<size_t>(kResizeScalesInput)] : nullptr;
    return resize_plane_scales(by_sizes_, scales, x.dims(), y.dims(), sh, sw);
  }

  template <typename T>  // float, or the bytes of u8 / i8
  static void run_nearest_plane(const Geometry& g, const T* src, size_t iw, T* dst, size_t oh, size_t ow) {
    const int32_t* ci = g.cols.i0.data();
    for (size_t r = 0; r < oh; ++r) {
      T* out = dst + r * ow;
      const size_t sr = static_cast<size_t>(g.rows.i0[r]);
      if (r > 0 && sr == static_cast<size_t>(g.rows.i0[r - 1])) {
        std::memcpy(out, out - ow, ow * sizeof(T));
        continue;
      }
      const T* in = src + sr * iw;
      if (g.col_repeat == 2) {
        for (size_t c = 0; c < iw; ++c) out[2 * c] = out[2 * c + 1] = in[c];  // vectorizes: no index loads
      } else if (g.col_repeat > 2) {
        for (size_t c = 0; c < iw; ++c) std::fill_n(out + c * g.col_repeat, g.col_repeat, in[c]);
      } else {
        for (size_t c = 0; c < ow; ++c) out[c] = in[ci[c]];
      }
    }
  }

  // Horizontal blend of one source row into `out` (ow values).
  static void blend_row(const ResizeAxisMap& cols, const float* in, float* out, size_t ow) {
    const int32_t* i0 = cols.i0.data();
    const int32_t* i1 = cols.i1.data();
    const float* w0 = cols.w0.data();
    const float* w1 = cols.w1.data();
    for (size_t c = 0; c < ow; ++c) out[c] = w0[c] * in[i0[c]] + w1[c] * in[i1[c]];
  }

  static void run_linear_plane(const Geometry& g, const float* src, size_t iw, float* dst, size_t oh, size_t ow,
                               float* scratch) {
    float* buf[2] = {scratch, scratch + ow};
    int64_t held[2] = {-1, -1};  // source row each buffer holds
    // The blended source row `sr`, evicting the buffer that does not hold `keep`.
    auto row = [&](int32_t sr, int32_t keep) -> const float* {
      for (int b = 0; b < 2; ++b)
        if (held[b] == sr) return buf[b];
      const int b = held[0] == keep ? 1 : 0;
      held[b] = sr;
      blend_row(g.cols, src + static_cast<size_t>(sr) * iw, buf[b], ow);
      return buf[b];
    };
    for (size_t r = 0; r < oh; ++r) {
      const int32_t r0 = g.rows.i0[r], r1 = g.rows.i1[r];
      const float* a = row(r0, r1);
      const float* b = row(r1, r0);
      const float wa = g.rows.w0[r], wb = g.rows.w1[r];
      float* out = dst + r * ow;
      for (size_t c = 0; c < ow; ++c) out[c] = wa * a[c] + wb * b[c];
    }
  }

  ResizeMode mode_;
  size_t elem_ = sizeof(float);
  std::unique_ptr<CpuOp> fallback_;
  Geometry geo_;
  bool by_sizes_ = false;     // the last run's output came from `sizes` (else `scales`)
  size_t scratch_width_ = 0;  // output width when statically known
};

}  // namespace

std::string resize_mode(const ir::Node& node, ResizeMode* mode) {
  const ir::Attributes& at = node.attrs;
  if (node.op_type != "Resize" || (node.opset > 0 && node.opset < 11)) return "unsupported op: Resize before opset 11";
  if (ops::has_fused_epilogue(node)) return "unsupported op: fused Resize";
  if (at.get_int("antialias", 0) != 0 || at.has("axes") || at.has("keep_aspect_ratio_policy"))
    return "unsupported op: Resize with antialias, axes or keep_aspect_ratio_policy";
  std::string m = at.get_string("mode", "nearest");
  if (m == "bilinear") m = "linear";
  if (m != "nearest" && m != "linear") return "unsupported op: Resize mode " + m;
  mode->linear = m == "linear";
  const std::string c = at.get_string("coordinate_transformation_mode", "half_pixel");
  if (c == "half_pixel") mode->ctm = ResizeMode::Ctm::kHalfPixel;
  else if (c == "pytorch_half_pixel") mode->ctm = ResizeMode::Ctm::kPytorchHalfPixel;
  else if (c == "align_corners") mode->ctm = ResizeMode::Ctm::kAlignCorners;
  else if (c == "asymmetric") mode->ctm = ResizeMode::Ctm::kAsymmetric;
  else if (c == "tf_half_pixel_for_nearest" || c == "tf_half_pixel_for_nn")
    mode->ctm = ResizeMode::Ctm::kTfHalfPixelForNearest;
  else return "unsupported op: Resize coordinate_transformation_mode " + c;
  const std::string n = at.get_string("nearest_mode", "round_prefer_floor");
  if (n == "round_prefer_floor") mode->nearest = ResizeMode::Nearest::kRoundPreferFloor;
  else if (n == "round_prefer_ceil") mode->nearest = ResizeMode::Nearest::kRoundPreferCeil;
  else if (n == "floor") mode->nearest = ResizeMode::Nearest::kFloor;
  else if (n == "ceil") mode->nearest = ResizeMode::Nearest::kCeil;
  else return "unsupported op: Resize nearest_mode " + n;
  // tf_half_pixel_for_nearest maps N and C too: x -> x + 0.5, which reads the next channel
  // unless nearest rounds it back down.
  const bool rounds_up =
      mode->nearest == ResizeMode::Nearest::kCeil || mode->nearest == ResizeMode::Nearest::kRoundPreferCeil;
  if (mode->ctm == ResizeMode::Ctm::kTfHalfPixelForNearest && (mode->linear || rounds_up))
    return "unsupported op: Resize tf_half_pixel_for_nearest rounding up";
  return "";
}

namespace {

double original_coordinate(const ResizeMode& mode, double x, double in, double scale, double resized_len) {
  switch (mode.ctm) {
    case ResizeMode::Ctm::kAsymmetric: return x / scale;
    case ResizeMode::Ctm::kHalfPixel: return (x + 0.5) / scale - 0.5;
    case ResizeMode::Ctm::kPytorchHalfPixel: return resized_len > 1.0 ? (x + 0.5) / scale - 0.5 : 0.0;
    case ResizeMode::Ctm::kAlignCorners: return resized_len == 1.0 ? 0.0 : x * (in - 1.0) / (resized_len - 1.0);
    case ResizeMode::Ctm::kTfHalfPixelForNearest: return (x + 0.5) / scale;
  }
  return 0.0;
}

int64_t nearest_index(const ResizeMode& mode, double xo) {
  const double fl = std::floor(xo);
  const double ratio = xo - fl;
  if (ratio == 0.0) return static_cast<int64_t>(fl);
  bool up = false;
  switch (mode.nearest) {
    case ResizeMode::Nearest::kRoundPreferFloor: up = ratio > 0.5; break;
    case ResizeMode::Nearest::kRoundPreferCeil: up = ratio >= 0.5; break;
    case ResizeMode::Nearest::kFloor: up = false; break;
    case ResizeMode::Nearest::kCeil: up = true; break;
  }
  return static_cast<int64_t>(fl) + (up ? 1 : 0);
}

}  // namespace

bool resize_plane_scales(bool by_sizes, const ir::Tensor* scales, const std::vector<int64_t>& in,
                         const std::vector<int64_t>& out, double* sh, double* sw) {
  if (by_sizes) {
    *sh = static_cast<double>(out[2]) / static_cast<double>(in[2]);
    *sw = static_cast<double>(out[3]) / static_cast<double>(in[3]);
    return true;
  }
  if (!scales || scales->numel() != 4 || scales->get_double(0) != 1.0 || scales->get_double(1) != 1.0) return false;
  *sh = scales->get_double(2);
  *sw = scales->get_double(3);
  return *sh > 0.0 && *sw > 0.0 && std::isfinite(*sh) && std::isfinite(*sw);
}

ResizeAxisMap resize_axis_map(const ResizeMode& mode, int64_t in_len, int64_t out_len, double scale, bool by_sizes) {
  ResizeAxisMap m;
  const size_t n = static_cast<size_t>(out_len);
  m.i0.resize(n);
  if (mode.linear) {
    m.i1.resize(n);
    m.w0.resize(n);
    m.w1.resize(n);
  }
  const double in = static_cast<double>(in_len);
  const double resized_len = by_sizes ? static_cast<double>(out_len) : scale * in;
  auto clamp = [in_len](int64_t i) { return static_cast<int32_t>(std::clamp<int64_t>(i, 0, in_len - 1)); };
  for (size_t o = 0; o < n; ++o) {
    const double xo = original_coordinate(mode, static_cast<double>(o), in, scale, resized_len);
    if (!mode.linear) {
      m.i0[o] = clamp(nearest_index(mode, xo));
      continue;
    }
    const double fl = std::floor(xo);
    const double ratio = xo - fl;
    if (ratio == 0.0) {
      // One tap of weight 1 (the reference drops the zero-weight neighbour): half of the same
      // value twice is exact, also for infinities.
      m.i0[o] = m.i1[o] = clamp(static_cast<int64_t>(fl));
      m.w0[o] = m.w1[o] = 0.5f;
    } else {
      m.i0[o] = clamp(static_cast<int64_t>(fl));
      m.i1[o] = clamp(static_cast<int64_t>(fl) + 1);
      m.w0[o] = static_cast<float>(1.0 - ratio);
      m.w1[o] = static_cast<float>(ratio);
    }
  }
  return m;
}

Result<std::unique_ptr<CpuOp>> make_resize(const ir::Node& node, const CompileContext&) {
  const ir::Value* x = node.input(0);
  ResizeMode mode;
  if (!resize_mode(node, &mode).empty()) return std::unique_ptr<CpuOp>();
  if (!x || !x->type.shape.rank_known() || x->type.shape.rank() != 4) return std::unique_ptr<CpuOp>();
  const ir::DType t = x->type.dtype;
  const bool integer = t == ir::DType::kU8 || t == ir::DType::kI8 || t == ir::DType::kU16 || t == ir::DType::kI16;
  if (!is_f32(x) && !(integer && !mode.linear)) return std::unique_ptr<CpuOp>();
  std::unique_ptr<CpuOp> fallback = make_ref_op(node);
  if (!fallback) return std::unique_ptr<CpuOp>();
  auto op = std::make_unique<ResizeOp>(mode, integer ? ir::dtype_size(t) : sizeof(float), std::move(fallback));
  const ir::Value* y = node.outputs.empty() ? nullptr : node.outputs[0];
  if (y && y->type.shape.rank_known() && y->type.shape.rank() == 4) {
    if (auto dims = y->type.shape.static_dims()) op->set_scratch_width(static_cast<size_t>((*dims)[3]));
  }
  return std::unique_ptr<CpuOp>(std::move(op));
}

}  // namespace nfuse::backends::cpu
