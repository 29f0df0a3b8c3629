// Depthwise Conv (group == channels, one filter per channel) on the cpu backend: a direct kernel
// from src/kernels/f32-dwconv (AVX-512 or AVX2 3x3/5x5, stride 1/2, any dilation, where the CPU
// has it; scalar otherwise), with the clamp and HardSwish applied in its store.
//
// Large planes are read in place: the kernels handle the zero padding at the border themselves,
// so depthwise costs one read of the input and one write of the output. Small planes (the later
// MobileNet stages: 7x7 .. 56x56) are copied with their zero padding into per-thread scratch
// first: the copy is an L1-resident memcpy, and on the padded copy every kernel step is a plain,
// unmasked one, where in place a 14- or 28-wide row is all edge steps with masked loads (measured:
// the copy wins up to 56x56, in place wins from 112x112).
//
// run_centered() (the dynamically quantized depthwise Conv, cpu_dwconv.h) quantizes each plane's
// rows on their way in, into the same per-worker scratch (the small-plane copy, or a plane-sized
// buffer), so the centred values are written and read while in cache instead of as one more
// whole-tensor pass; the per-channel scale is applied to each output plane just written.
//
// Work is split into tasks of whole planes (several small planes per task, so a 7x7x960 layer is
// not 960 dispatches) or, when there are too few planes for the threads, strips of output rows.
#include <algorithm>
#include <cstring>

#include "backends/cpu/cpu_dwconv.h"

#include "backends/cpu/cpu_conv_util.h"
#include "backends/pack_store.h"
#include "core/aligned_storage.h"
#include "kernels/f32-dwconv/f32_dwconv.h"
#include "kernels/f32-dwconv/f32_dwconv_c16.h"

namespace nfuse::backends::cpu {
namespace {

constexpr size_t kCopyMaxFloats = 8192;      // padded planes up to this size (32 KiB, L1) are copied
// Input planes up to this many pixels run 16 channels per call (f32_dwconv_c16.h), whose blocks
// then fit L1 (bench/RESULTS.md 2026-12-07: 14x14 and 7x7 planes 1.3-2.3x faster, 28x28 ones
// slower, in stride 1 and 2).
constexpr size_t kChannelBlockMaxPixels = 256;

struct PaddedPlane {
  size_t rows = 0, cols = 0, stride = 0;
  size_t floats() const { return rows * stride; }
};

// The padded plane the window covers, rows 16-float aligned with at least 32 zeros of slack, so
// even a partial last 16-wide stride-2 step reads inside the row.
PaddedPlane padded_plane(const Conv2dGeometry& g) {
  PaddedPlane p;
  p.rows = (g.ho - 1) * g.sh + (g.kh - 1) * g.dh + 1;
  p.cols = (g.wo - 1) * g.sw + (g.kw - 1) * g.dw + 1;
  p.stride = (p.cols + 32 + 15) / 16 * 16;
  return p;
}

bool copy_small_planes(const Conv2dGeometry& g) { return padded_plane(g).floats() <= kCopyMaxFloats; }

// Writes n values of an input row: copied, or quantized and centred for run_centered().
void load_row(const float* x, size_t n, float* dst, const DwCenteredInput* in) {
  if (!in) {
    std::memcpy(dst, x, n * sizeof(float));
  } else if (in->params.scale == 0.0f) {
    std::fill(dst, dst + n, 0.0f);
  } else {
    in->quantize(x, n, in->params, dst);
  }
}

// Copies channel plane `x` into `dst` at (pad_top, pad_left); with `fill`, also writes the zeros
// around it (once per worker and run: the next plane's copy leaves them in place).
void copy_padded(const Conv2dGeometry& g, const PaddedPlane& pp, const float* x, float* dst, bool fill,
                 const DwCenteredInput* in) {
  if (fill) std::fill(dst, dst + pp.floats(), 0.0f);
  const size_t left = std::min(g.pad_left, pp.cols);
  const size_t copy = pp.cols > left ? std::min(g.w, pp.cols - left) : 0;
  const size_t r1 = std::min(pp.rows, g.pad_top + g.h);
  for (size_t r = std::min(g.pad_top, r1); r < r1; ++r) {
    load_row(x + (r - g.pad_top) * g.w, copy, dst + r * pp.stride + left, in);
  }
}

class DwConv final : public DwConvOp {
 public:
  DwConv(const ir::Node& node, std::vector<int64_t> w_dims, PackedFloats weights, const ir::Tensor* bias, Epilogue e,
         bool centered, bool small_planes)
      : node_(node),
        w_dims_(std::move(w_dims)),
        epilogue_(std::move(e)),
        centered_(centered),
        weights_(std::move(weights)) {
    if (bias) bias_ = PackedFloats::borrow(bias->data<float>(), static_cast<size_t>(bias->numel()), nullptr);
    if (centered_ || !small_planes) channel_blocks_ = nullptr;
  }

  // The channel blocks' taps in the kernel's layout, once (a kernel call would repack them),
  // unless the planned input planes are too large for them; through `packs` when given. The
  // per-plane kernels read the weights as they are, so the key says the op reads them too.
  void pack_channel_blocks(PackStore* packs) {
    if (!channel_blocks_) return;
    const size_t channels = static_cast<size_t>(w_dims_[0]), taps = weights_.size() / std::max<size_t>(channels, 1);
    const size_t block = taps * 16;
    auto fill = [&](float* dst) {
      for (size_t c0 = 0; c0 < channels; c0 += 16)
        kernels::f32_dwconv_c16_pack(weights_.data() + c0 * taps, std::min<size_t>(16, channels - c0), taps,
                                     dst + c0 / 16 * block);
    };
    auto key = [&] { return pack_key("f32.dwconv.c16", *node_.input(1), {channels, taps}); };
    if (!pack_weights(packs, *node_.input(1), key, (channels + 15) / 16 * block, &taps16_, fill, true))
      channel_blocks_ = nullptr;  // out of memory: the per-plane kernels, which need none
  }

  size_t scratch_floats(const OpTensors& t, size_t) const override {
    const std::optional<Conv2dGeometry> g = geo_.peek(node_.attrs, t.inputs[0]->dims(), w_dims_);
    if (!g) return 0;  // run() reports the error
    if (copy_small_planes(*g)) {
      const size_t planes = padded_plane(*g).floats();
      if (centered_ || !channel_blocks(*g)) return planes;
      return std::max(planes, kernels::f32_dwconv_c16_scratch_floats(block_params(*g)));
    }
    return centered_ ? g->h * g->w : 0;  // the mapped input plane
  }

  Status run(const OpTensors& t, RunContext& rc) override { return run_planes(t, rc, nullptr); }

  Status run_centered(const OpTensors& t, RunContext& rc, const DwCenteredInput& in) override {
    if (!centered_) return internal_error(node_.label() + ": depthwise op built without a centred-input scratch");
    return run_planes(t, rc, &in);
  }

 private:
  Status run_planes(const OpTensors& t, RunContext& rc, const DwCenteredInput* in) {
    NFUSE_ASSIGN_OR_RETURN(const Conv2dGeometry* g, geo_.get(node_.attrs, t.inputs[0]->dims(), w_dims_));
    if (!fn_ || g != last_) {
      fn_ = kernels::f32_dwconv_select(kernels::selected_isa(), g->kh, g->kw, g->sh, g->sw, g->dh, g->dw);
      last_ = g;
    }
    const float* x = t.inputs[0]->data<float>();
    float* y = t.outputs[0]->data<float>();
    const float* r = !in && epilogue_.residual ? t.implicit_inputs[0]->data<float>() : nullptr;
    const size_t khw = g->kh * g->kw, in_plane = g->h * g->w, out_plane = g->ho * g->wo;
    const Activation& act = epilogue_.act;
    const bool hswish_in_store = !in && !r && act.kind == ops::FusedActivation::kHardSwish;

    const bool copy = copy_small_planes(*g);
    if (copy && !in && !r && channel_blocks(*g)) return run_channel_blocks(*g, x, y, rc);
    const PaddedPlane pp = padded_plane(*g);
    if (copy) {  // scratch is shared with other ops: each worker zero-fills its buffer once per run
      if (buffer_ready_.size() < rc.pool.threads()) buffer_ready_.resize(rc.pool.threads());
      std::fill(buffer_ready_.begin(), buffer_ready_.end(), 0);
    }

    // Task shape: `group` whole planes per task, or one plane in `strips` row strips.
    const size_t planes = g->n * g->c, threads = rc.pool.threads();
    size_t group = 1, strips = 1;
    if (planes >= 4 * threads || copy) {
      group = items_per_task(planes, out_plane, threads, kMinTaskOutputs);
    } else if (threads > 1) {
      strips = std::min(g->ho, (4 * threads + planes - 1) / planes);
    }
    const size_t rows_per_strip = (g->ho + strips - 1) / strips;
    const size_t tasks = strips > 1 ? planes * strips : (planes + group - 1) / group;

    auto run_plane = [&](size_t plane, size_t y0, size_t y1, size_t worker) {
      const size_t c = plane % g->c;
      kernels::F32DwconvParams p;
      if (copy) {
        float* buf = rc.scratch.get(worker);
        copy_padded(*g, pp, x + plane * in_plane, buf, !buffer_ready_[worker], in);
        buffer_ready_[worker] = 1;
        p.in = buf;
        p.in_stride = pp.stride;
        p.in_height = pp.rows;
        p.in_width = pp.stride;  // the slack is zeros too: every step reads inside the row
      } else {
        p.in = x + plane * in_plane;
        if (in) {  // the input rows these output rows read, mapped into the scratch plane
          float* buf = rc.scratch.get(worker);
          const size_t r0 = std::min(g->h, y0 * g->sh > g->pad_top ? y0 * g->sh - g->pad_top : 0);
          const size_t last = (y1 - 1) * g->sh + (g->kh - 1) * g->dh + 1;
          const size_t r1 = std::min(g->h, last > g->pad_top ? last - g->pad_top : 0);
          if (r1 > r0) load_row(p.in + r0 * g->w, (r1 - r0) * g->w, buf + r0 * g->w, in);
          p.in = buf;
        }
        p.in_stride = g->w;
        p.in_height = g->h;
        p.in_width = g->w;
        p.pad_top = g->pad_top;
        p.pad_left = g->pad_left;
      }
      p.w = weights_.data() + c * khw;
      p.bias = in || !bias_.data() ? 0.0f : bias_.data()[c];
      p.out = y + plane * out_plane;
      p.out_stride = g->wo;
      p.out_width = g->wo;
      p.kh = g->kh;
      p.kw = g->kw;
      p.sh = g->sh;
      p.sw = g->sw;
      p.dh = g->dh;
      p.dw = g->dw;
      if (!r && !in) {
        p.min = act.min;
        p.max = act.max;
      }
      if (hswish_in_store) {
        p.act = kernels::F32DwconvAct::kHardSwish;
        p.act_a = act.params[0];
        p.act_b = act.params[1];
      }
      fn_(p, y0, y1);
      float* o = p.out + y0 * g->wo;
      const size_t n = (y1 - y0) * g->wo;
      if (in) {  // the exact integer sums, scaled
        const float s = in->scale[c], b = in->bias[c], lo = in->act->min, hi = in->act->max;
        for (size_t i = 0; i < n; ++i) o[i] = std::min(hi, std::max(lo, o[i] * s + b));
        if (in->act->needs_pass()) in->act->apply(o, n);
      } else if (r) {
        add_residual_and_activate(o, r + plane * out_plane + y0 * g->wo, n, act);
      } else if (hswish_in_store) {
        act.apply_affine(o, n);  // the kernel applied the HardSwish, not what follows it
      } else if (act.needs_pass()) {
        act.apply(o, n);  // the rows this task just wrote, still in cache
      }
    };
    auto task = [&](size_t i, size_t worker) {
      if (strips > 1) {
        const size_t y0 = std::min(g->ho, (i % strips) * rows_per_strip);
        run_plane(i / strips, y0, std::min(g->ho, y0 + rows_per_strip), worker);
        return;
      }
      const size_t end = std::min(planes, (i + 1) * group);
      for (size_t plane = i * group; plane < end; ++plane) run_plane(plane, 0, g->ho, worker);
    };
    rc.pool.run(tasks, task);
    return ok_status();
  }

  bool channel_blocks(const Conv2dGeometry& g) const {
    return channel_blocks_ && g.h * g.w <= kChannelBlockMaxPixels && g.ho * g.wo <= kChannelBlockMaxPixels;
  }

  // The geometry's fields of a channel-block call (no planes, channels or scratch yet).
  static kernels::F32DwconvC16Params block_params(const Conv2dGeometry& g) {
    return {.h = g.h,
            .w = g.w,
            .out_h = g.ho,
            .out_w = g.wo,
            .kh = g.kh,
            .kw = g.kw,
            .sh = g.sh,
            .sw = g.sw,
            .dh = g.dh,
            .dw = g.dw,
            .pad_top = g.pad_top,
            .pad_left = g.pad_left};
  }

  // Small planes, 16 channels per call with the channels in the vector lanes (f32_dwconv_c16.h):
  // a 14x14 or 7x7 plane fills a row's vector poorly and pays a copy and set-up per plane.
  Status run_channel_blocks(const Conv2dGeometry& g, const float* x, float* y, RunContext& rc) {
    const Activation& act = epilogue_.act;
    const size_t in_plane = g.h * g.w, out_plane = g.ho * g.wo, khw = g.kh * g.kw;
    const size_t per_image = (g.c + 15) / 16, blocks = g.n * per_image;
    auto task = [&](size_t i, size_t worker) {
      const size_t image = i / per_image, c0 = (i % per_image) * 16;
      kernels::F32DwconvC16Params p = block_params(g);
      p.channels = std::min<size_t>(16, g.c - c0);
      p.in = x + (image * g.c + c0) * in_plane;
      p.in_plane = in_plane;
      p.taps16 = taps16_.data() + c0 * khw;  // block c0 / 16, khw * 16 floats each
      p.bias = bias_.data() ? bias_.data() + c0 : nullptr;
      p.out = y + (image * g.c + c0) * out_plane;
      p.out_plane = out_plane;
      p.min = act.min;
      p.max = act.max;
      p.scratch = rc.scratch.get(worker);
      channel_blocks_(p);
      if (act.needs_pass()) act.apply(p.out, p.channels * out_plane);  // the block's planes are adjacent
    };
    // A 16-channel block of a 7x7 plane is ~1 us of work: one per task spends as much on the
    // task counter's trips between cores (items_per_task).
    run_items(rc.pool, blocks, items_per_task(blocks, 16 * out_plane, rc.pool.threads(), kMinTaskOutputs), task);
    return ok_status();
  }

  const ir::Node& node_;
  std::vector<int64_t> w_dims_;
  Epilogue epilogue_;
  bool centered_;  // scratch_floats() covers run_centered()'s mapped plane
  kernels::F32DwconvC16Fn channel_blocks_ = kernels::f32_dwconv_c16_select(kernels::selected_isa());
  PackedFloats weights_, bias_;  // the node's graph constants, read in place (bias: none when null)
  PackedFloats taps16_;          // channel_blocks_' taps, f32_dwconv_c16_pack's layout per 16 channels
  Conv2dGeometryCache geo_;
  kernels::F32DwconvFn fn_ = nullptr;
  const Conv2dGeometry* last_ = nullptr;
  std::vector<uint8_t> buffer_ready_;  // per worker: its scratch holds this run's zero border
};

}  // namespace

std::unique_ptr<DwConvOp> make_dwconv(const ir::Node& node, const ir::Tensor& w, const ir::Tensor* bias,
                                      Epilogue epilogue, const std::vector<int64_t>* x_dims, PackStore* packs) {
  const bool small_planes =
      !x_dims || x_dims->size() != 4 || (*x_dims)[2] * (*x_dims)[3] <= static_cast<int64_t>(kChannelBlockMaxPixels);
  // The graph owns its constants for as long as an op built on its node exists.
  auto op = std::make_unique<DwConv>(node, w.dims(),
                                     PackedFloats::borrow(w.data<float>(), static_cast<size_t>(w.numel()), nullptr),
                                     bias, std::move(epilogue), false, small_planes);
  op->pack_channel_blocks(packs);
  return op;
}

std::unique_ptr<DwConvOp> make_dwconv_centered(const ir::Node& node, std::vector<int64_t> w_dims, PackedFloats w) {
  return std::make_unique<DwConv>(node, std::move(w_dims), std::move(w), nullptr, Epilogue{}, true, false);
}

}  // namespace nfuse::backends::cpu
