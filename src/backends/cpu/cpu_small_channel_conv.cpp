#include "backends/cpu/cpu_small_channel_conv.h"

#include <algorithm>

namespace nfuse::backends::cpu {

namespace {

// A stem's K = ci * kh * kw is 27: an im2col GEMM stores and reloads its accumulator tile for
// every 27 multiply-adds. Up to 4 channels the direct rows win (measured on the 3x3 stride-2
// stems of lraspp and the OCR detector at 960: see bench/RESULTS.md).
constexpr int64_t kMaxChannels = 4;
// Taps (ci * kh * kw) up to which the direct rows beat an im2col GEMM for any output channel count.
constexpr int64_t kAnyChannelsTaps = 64;
// Output channels up to which the direct rows take windows of kAnyChannelsTaps to kF32SconvMaxTaps taps.
constexpr int64_t kMaxLongWindowChannels = 32;

}  // namespace

void SmallChannelConv::init(const ir::Tensor& w, const ir::Tensor* bias, Activation act) {
  fn_ = kernels::f32_sconv_row_kernel(kernels::selected_isa());
  act_ = std::move(act);
  co_ = static_cast<size_t>(w.dim(0));
  ci_ = static_cast<size_t>(w.dim(1));
  taps_ = static_cast<size_t>(w.numel()) / co_;
  weights_ = PackedFloats::borrow(w.data<float>(), static_cast<size_t>(w.numel()), nullptr);
  if (bias) bias_ = PackedFloats::borrow(bias->data<float>(), co_, nullptr);
}

void SmallChannelConv::run(const Plane& g, const ConstPlaneRows& x, const PlaneRows& y, size_t y0, size_t y1,
                           float* ws) const {
  const float* rows[kernels::kF32SconvMaxTaps];
  kernels::F32SconvRowArgs a;
  a.rows = rows;
  a.ci = ci_;
  a.kh = g.kh;
  a.kw = g.kw;
  a.sw = g.sw;
  a.pad_left = g.pad_left;
  a.w = g.w;
  a.wo = g.wo;
  a.co = co_;
  a.weights = weights_.data();
  a.bias = bias_.data();
  a.out_stride = y.plane;
  a.min = act_.min;
  a.max = act_.max;
  a.workspace = ws;
  for (size_t oy = y0; oy < y1; ++oy) {
    for (size_t c = 0; c < ci_; ++c)
      for (size_t ky = 0; ky < g.kh; ++ky) {
        const long long iy = static_cast<long long>(oy * g.sh + ky) - static_cast<long long>(g.pad_top);
        rows[c * g.kh + ky] = iy >= 0 && iy < static_cast<long long>(g.h) ? x.row(c, static_cast<size_t>(iy)) : nullptr;
      }
    a.out = y.row(0, oy);
    fn_(a);
    if (act_.needs_pass())
      for (size_t o = 0; o < co_; ++o) act_.apply(y.row(o, oy), g.wo);
  }
}

bool use_small_channel_conv(const ir::Node& node, const ir::Tensor& w) {
  const ConvAlgorithm forced = forced_conv_algorithm();
  if (forced != ConvAlgorithm::kAuto && forced != ConvAlgorithm::kSmallChannels) return false;
  if (w.rank() != 4 || node.attrs.get_int("group", 1) != 1 || node.attrs.has(ops::kFusedResidualAttr)) return false;
  for (int64_t d : node.attrs.get_ints("dilations", {1, 1}))
    if (d != 1) return false;
  const std::vector<int64_t> strides = node.attrs.get_ints("strides", {1, 1});
  if (strides.size() != 2 || strides[1] < 1 || strides[1] > 2 || strides[0] < 1) return false;
  if (w.dim(1) > kMaxChannels) return false;
  const int64_t taps = w.numel() / w.dim(0);
  if (taps <= kAnyChannelsTaps) return true;
  // Longer windows (YOLOv5's 6x6 stem, 108 taps) only for few output channels: with 64 of them
  // the im2col GEMM's tiles fill and it wins (ResNet's 7x7 conv1, 147 taps: 1.7 ms by GEMM, 2.2
  // direct), with 16 the direct rows do (YOLO's stem at 640: 5.8 ms by GEMM, 3.4 direct).
  return taps <= static_cast<int64_t>(kernels::kF32SconvMaxTaps) &&
         (w.dim(0) <= kMaxLongWindowChannels || forced == ConvAlgorithm::kSmallChannels);
}

namespace {

class SmallChannelConvOp final : public CpuOp {
 public:
  SmallChannelConvOp(const ir::Node& node, const ir::Tensor& w) : node_(node), w_dims_(w.dims()) {}
  void init(const ir::Tensor& w, const ir::Tensor* bias, Activation act) { conv_.init(w, bias, std::move(act)); }

  size_t scratch_floats(const OpTensors& t, size_t) const override {
    if (t.outputs.empty() || !t.outputs[0]) return conv_.scratch_floats(static_wo_);
    const ir::Tensor& y = *t.outputs[0];
    return y.rank() == 4 ? conv_.scratch_floats(static_cast<size_t>(y.dim(3))) : 0;
  }
  void set_static_wo(size_t wo) { static_wo_ = wo; }

  size_t pieces(const OpTensors& t, size_t threads) const override {
    return conv_pieces(node_.attrs, t.inputs[0]->dims(), w_dims_, threads);
  }

  Status run(const OpTensors& t, RunContext& rc) override {
    NFUSE_ASSIGN_OR_RETURN(const Conv2dGeometry* g, geo_.get(node_.attrs, t.inputs[0]->dims(), w_dims_));
    const SmallChannelConv::Plane plane{g->h, g->w, g->ho, g->wo, g->kh, g->kw, g->sh, g->sw, g->pad_top, g->pad_left};
    const float* x = t.inputs[0]->data<float>();
    float* y = t.outputs[0]->data<float>();
    // Tasks of whole rows, about four per thread per image (in each piece).
    const size_t threads = rc.task_slots();
    const size_t step = std::max<size_t>(1, g->ho / (4 * threads));
    const size_t per_image = (g->ho + step - 1) / step;
    rc.run_tasks(g->n * per_image, [&](size_t i, size_t worker) {
      const size_t n = i / per_image, y0 = (i % per_image) * step, y1 = std::min(g->ho, y0 + step);
      const ConstPlaneRows xr{x + n * g->c * g->h * g->w, g->h * g->w, g->w, 0};
      const PlaneRows yr{y + n * g->m * g->ho * g->wo, g->ho * g->wo, g->wo, 0};
      conv_.run(plane, xr, yr, y0, y1, rc.scratch.get(worker));
    });
    return ok_status();
  }

 private:
  const ir::Node& node_;
  std::vector<int64_t> w_dims_;
  SmallChannelConv conv_;
  size_t static_wo_ = 0;
  Conv2dGeometryCache geo_;
};

}  // namespace

Result<std::unique_ptr<CpuOp>> make_small_channel_conv(const ir::Node& node, const ir::Tensor& w,
                                                       const ir::Tensor* bias, Epilogue epilogue) {
  auto op = std::make_unique<SmallChannelConvOp>(node, w);
  op->init(w, bias, std::move(epilogue.act));
  const ir::Value* y = node.outputs.empty() ? nullptr : node.outputs[0];
  if (y && y->type.shape.rank_known() && y->type.shape.rank() == 4)
    if (auto dims = y->type.shape.static_dims()) op->set_static_wo(static_cast<size_t>((*dims)[3]));
  return std::unique_ptr<CpuOp>(std::move(op));
}

}  // namespace nfuse::backends::cpu
