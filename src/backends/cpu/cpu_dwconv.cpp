// Depthwise Conv (group == channels, one filter per channel) on the cpu backend: each task copies
// one channel plane with its zero padding into per-thread scratch and runs a direct kernel from
// src/kernels/f32-dwconv (AVX-512 or AVX2 3x3/5x5, stride 1/2, any dilation, where the CPU has
// it; scalar otherwise).
#include <algorithm>
#include <cstring>

#include "backends/cpu/cpu_conv_util.h"
#include "kernels/f32-dwconv/f32_dwconv.h"

namespace nfuse::backends::cpu {
namespace {

struct PaddedPlane {
  size_t rows = 0, cols = 0, stride = 0;
};

PaddedPlane padded_plane(const Conv2dGeometry& g) {
  PaddedPlane p;
  p.rows = (g.ho - 1) * g.sh + (g.kh - 1) * g.dh + 1;
  p.cols = (g.wo - 1) * g.sw + (g.kw - 1) * g.dw + 1;
  p.stride = (p.cols + kernels::kF32DwconvRowSlack + 15) / 16 * 16;
  return p;
}

// Copies channel plane `x` (h x w) into `dst` with pad_top / pad_left zeros before it and zeros
// wherever the padded window reaches past the input, slack columns included.
void copy_padded(const Conv2dGeometry& g, const PaddedPlane& pp, const float* x, float* dst) {
  const size_t left = std::min(g.pad_left, pp.cols);
  const size_t copy = pp.cols > g.pad_left ? std::min(g.w, pp.cols - g.pad_left) : 0;
  for (size_t r = 0; r < pp.rows; ++r) {
    float* d = dst + r * pp.stride;
    const size_t iy = r - g.pad_top;  // wraps when r < pad_top
    if (r < g.pad_top || iy >= g.h) {
      std::fill(d, d + pp.stride, 0.0f);
      continue;
    }
    std::fill(d, d + left, 0.0f);
    std::memcpy(d + left, x + iy * g.w, copy * sizeof(float));
    std::fill(d + left + copy, d + pp.stride, 0.0f);
  }
}

// The next plane into a buffer copy_padded already filled for this geometry: the zeros stay
// where they are, so only the input rows are copied.
void copy_interior(const Conv2dGeometry& g, const PaddedPlane& pp, const float* x, float* dst) {
  const size_t left = std::min(g.pad_left, pp.cols);
  const size_t copy = pp.cols > g.pad_left ? std::min(g.w, pp.cols - g.pad_left) : 0;
  const size_t r1 = std::min(pp.rows, g.pad_top + g.h);
  for (size_t r = std::min(g.pad_top, r1); r < r1; ++r) {
    std::memcpy(dst + r * pp.stride + left, x + (r - g.pad_top) * g.w, copy * sizeof(float));
  }
}

class DwConv final : public CpuOp {
 public:
  DwConv(const ir::Node& node, const ir::Tensor& w, const ir::Tensor* bias, Epilogue e)
      : node_(node), w_dims_(w.dims()), epilogue_(std::move(e)) {
    weights_.assign(w.data<float>(), w.data<float>() + w.numel());
    if (bias) bias_.assign(bias->data<float>(), bias->data<float>() + bias->numel());
  }

  size_t scratch_floats(const OpTensors& t, size_t) const override {
    const Conv2dGeometry* g = geo_.cached(t.inputs[0]->dims());
    Conv2dGeometryCache tmp;
    if (!g) {
      auto r = tmp.get(node_.attrs, t.inputs[0]->dims(), w_dims_);
      if (!r.ok()) return 0;  // run() reports the error
      g = *r;
    }
    const PaddedPlane pp = padded_plane(*g);
    return pp.rows * pp.stride;
  }

  Status run(const OpTensors& t, RunContext& rc) override {
    NFUSE_ASSIGN_OR_RETURN(const Conv2dGeometry* g, geo_.get(node_.attrs, t.inputs[0]->dims(), w_dims_));
    if (!fn_ || g != last_) {
      fn_ = kernels::f32_dwconv_select(kernels::selected_isa(), g->kh, g->kw, g->sh, g->sw, g->dh, g->dw);
      last_ = g;
    }
    const PaddedPlane pp = padded_plane(*g);
    const float* x = t.inputs[0]->data<float>();
    float* y = t.outputs[0]->data<float>();
    const float* r = epilogue_.residual ? t.implicit_inputs[0]->data<float>() : nullptr;
    const size_t khw = g->kh * g->kw, in_plane = g->h * g->w, out_plane = g->ho * g->wo;
    const Activation& act = epilogue_.act;
    // Scratch is shared with other ops, so each worker zero-pads its buffer once per run.
    if (buffer_ready_.size() < rc.pool.threads()) buffer_ready_.resize(rc.pool.threads());
    std::fill(buffer_ready_.begin(), buffer_ready_.end(), 0);
    auto task = [&](size_t plane, size_t worker) {
      const size_t c = plane % g->c;
      float* buf = rc.scratch.get(worker);
      if (buffer_ready_[worker]) {
        copy_interior(*g, pp, x + plane * in_plane, buf);
      } else {
        copy_padded(*g, pp, x + plane * in_plane, buf);
        buffer_ready_[worker] = 1;
      }
      kernels::F32DwconvParams p;
      p.in = buf;
      p.in_stride = pp.stride;
      p.w = weights_.data() + c * khw;
      p.bias = bias_.empty() ? 0.0f : bias_[c];
      p.out = y + plane * out_plane;
      p.out_stride = g->wo;
      p.out_width = g->wo;
      p.kh = g->kh;
      p.kw = g->kw;
      p.sh = g->sh;
      p.sw = g->sw;
      p.dh = g->dh;
      p.dw = g->dw;
      if (!r) {
        p.min = act.min;
        p.max = act.max;
      }
      fn_(p, 0, g->ho);
      if (r) {
        add_residual_and_activate(p.out, r + plane * out_plane, out_plane, act);
      } else if (act.needs_pass()) {
        act.apply(p.out, out_plane);
      }
    };
    rc.pool.run(g->n * g->c, task);
    return ok_status();
  }

 private:
  const ir::Node& node_;
  std::vector<int64_t> w_dims_;
  Epilogue epilogue_;
  std::vector<float> weights_, bias_;
  Conv2dGeometryCache geo_;
  kernels::F32DwconvFn fn_ = nullptr;
  const Conv2dGeometry* last_ = nullptr;
  std::vector<uint8_t> buffer_ready_;  // per worker: its scratch holds this run's padded layout
};

}  // namespace

Result<std::unique_ptr<CpuOp>> make_dwconv(const ir::Node& node, const ir::Tensor& w, const ir::Tensor* bias,
                                           Epilogue epilogue) {
  return std::unique_ptr<CpuOp>(std::make_unique<DwConv>(node, w, bias, std::move(epilogue)));
}

}  // namespace nfuse::backends::cpu
