// Conv over a single row (Conv1d after lift_1d_to_2d: a 1 x L input, a 1 x KW kernel) as a
// W * X GEMM without im2col. Output pixel q of tap t reads padded input column q * s + t * d.
// Split each input row by stride phase (phase ph holds columns ph, ph + s, ph + 2s, ...) and
// that column is phase (t d) % s at position q + (t d) / s: for a fixed tap, the B rows the GEMM
// needs (one per input channel) are contiguous runs of a phase at a fixed shift, one phase row
// apart. So with the weights' K ordered tap-major (k = t * Ci + ci), every K block of whole
// channels of one tap is a B matrix the microkernel reads in place through a row stride.
// The phase copy is the input strip once (stride 1: a padded copy); im2col would write it KW
// times over in panel order.
#include <algorithm>
#include <cstring>

#include "backends/cpu/cpu_conv_util.h"
#include "kernels/f32-gemm/f32_gemm.h"

namespace nfuse::backends::cpu {
namespace {

// Below this many input channels per group a tap's K block is too short to hide the microkernel's
// C load and store per block, and im2col (all taps in one block) is as fast (bench/RESULTS.md).
constexpr size_t kRowTapsMinChannels = 16;
// The phase copy of one strip (all phases and channels) targets this many floats: it stays in L2
// while every output channel panel sweeps it.
constexpr size_t kStripFloats = 32 * 1024;

// Copies columns [first, first + lp * s) of one padded row, split by phase: dst[ph * phase_stride
// + m] = padded[first + m * s + ph], where padded[i] = src[i] for 0 <= i < w and 0 elsewhere.
// S > 0 is the stride as a constant (the vectorised cases); S == 0 reads it from s.
template <size_t S>
void split_row(const float* src, size_t w, size_t s_runtime, ptrdiff_t first, size_t lp, float* dst,
               size_t phase_stride) {
  const size_t s = S > 0 ? S : s_runtime;
  const ptrdiff_t sw = static_cast<ptrdiff_t>(s);
  // m in [lo, hi): all s columns inside the row.
  const ptrdiff_t lo = std::clamp<ptrdiff_t>(first >= 0 ? 0 : (-first + sw - 1) / sw, 0, static_cast<ptrdiff_t>(lp));
  const ptrdiff_t room = static_cast<ptrdiff_t>(w) - first - sw;  // m * s <= room
  const ptrdiff_t hi = std::clamp<ptrdiff_t>(room < 0 ? 0 : room / sw + 1, lo, static_cast<ptrdiff_t>(lp));
  auto edge = [&](ptrdiff_t m) {
    for (size_t ph = 0; ph < s; ++ph) {
      const ptrdiff_t i = first + m * sw + static_cast<ptrdiff_t>(ph);
      dst[ph * phase_stride + static_cast<size_t>(m)] = i >= 0 && i < static_cast<ptrdiff_t>(w) ? src[i] : 0.0f;
    }
  };
  for (ptrdiff_t m = 0; m < lo; ++m) edge(m);
  if constexpr (S == 1) {
    if (hi > lo) std::memcpy(dst + lo, src + first + lo, static_cast<size_t>(hi - lo) * sizeof(float));
  } else if constexpr (S == 2) {
    float* d0 = dst;
    float* d1 = dst + phase_stride;
    for (ptrdiff_t m = lo; m < hi; ++m) {
      d0[m] = src[first + 2 * m];
      d1[m] = src[first + 2 * m + 1];
    }
  } else {
    for (ptrdiff_t m = lo; m < hi; ++m)
      for (size_t ph = 0; ph < s; ++ph)
        dst[ph * phase_stride + static_cast<size_t>(m)] = src[first + m * sw + static_cast<ptrdiff_t>(ph)];
  }
  for (ptrdiff_t m = hi; m < static_cast<ptrdiff_t>(lp); ++m) edge(m);
}

class RowTapsConv final : public CpuOp {
 public:
  RowTapsConv(const ir::Node& node, const ir::Tensor& w, const ir::Tensor* bias, Epilogue e)
      : node_(node),
        w_dims_(w.dims()),
        cfg_(kernels::f32_gemm_config_for_rows(
            static_cast<size_t>(w.dim(0)) / static_cast<size_t>(std::max<int64_t>(1, node.attrs.get_int("group", 1))))),
        epilogue_(std::move(e)) {
    group_ = static_cast<size_t>(node.attrs.get_int("group", 1));
    m_ = static_cast<size_t>(w.dim(0));
    mg_ = m_ / group_;
    cin_ = static_cast<size_t>(w.dim(1));
    taps_ = static_cast<size_t>(w.dim(3));
    kg_ = cin_ * taps_;
    // Channel blocks of at most one K block each, evened out.
    const size_t blocks = std::max<size_t>(1, (cin_ + cfg_.kc - 1) / cfg_.kc);
    cblock_ = (cin_ + blocks - 1) / blocks;
    panels_ = (mg_ + cfg_.mr - 1) / cfg_.mr;
    // The stride and dilation come from the attributes (the run-time geometry must agree).
    const auto strides = node.attrs.get_ints("strides", {1, 1});
    const auto dilations = node.attrs.get_ints("dilations", {1, 1});
    stride_ = static_cast<size_t>(strides.size() == 2 ? strides[1] : 1);
    dilation_ = static_cast<size_t>(dilations.size() == 2 ? dilations[1] : 1);
    max_shift_ = (taps_ - 1) * dilation_ / stride_;
    const size_t per_column = stride_ * cin_;
    const size_t cols = kStripFloats / per_column > max_shift_ ? kStripFloats / per_column - max_shift_ : 0;
    max_strip_ = std::max(cfg_.nr, cols / cfg_.nr * cfg_.nr);
    if (bias) bias_.assign(bias->data<float>(), bias->data<float>() + m_);
  }

  // A panels with K tap-major: column t * Ci + ci holds w[co][ci][0][t].
  bool pack(const ir::Tensor& w, PackStore* packs) {
    auto key = [&] { return pack_key("f32.conv.row_taps", *node_.input(1), {cfg_.mr, group_, mg_, kg_, cin_, taps_}); };
    return pack_weights(packs, *node_.input(1), key, group_ * panels_ * cfg_.mr * kg_, &packed_, [&](float* dst) {
      std::vector<float> reordered(mg_ * kg_);
      const float* src = w.data<float>();
      for (size_t gi = 0; gi < group_; ++gi) {
        for (size_t co = 0; co < mg_; ++co)
          for (size_t ci = 0; ci < cin_; ++ci)
            for (size_t t = 0; t < taps_; ++t)
              reordered[co * kg_ + t * cin_ + ci] = src[((gi * mg_ + co) * cin_ + ci) * taps_ + t];
        for (size_t p = 0; p < panels_; ++p) {
          const size_t rows = std::min(cfg_.mr, mg_ - p * cfg_.mr);
          kernels::f32_gemm_pack_a(cfg_.mr, rows, kg_, reordered.data() + p * cfg_.mr * kg_, kg_, 1,
                                   dst + (gi * panels_ + p) * cfg_.mr * kg_);
        }
      }
    });
  }

  size_t scratch_floats(const OpTensors&, size_t) const override { return stride_ * cin_ * row_floats(max_strip_); }

  Status run(const OpTensors& t, RunContext& rc) override {
    NFUSE_ASSIGN_OR_RETURN(const Conv2dGeometry* g, geo_.get(node_.attrs, t.inputs[0]->dims(), w_dims_));
    if (g->h != 1 || g->kh != 1 || g->ho != 1 || g->sw != stride_ || g->dw != dilation_) {
      return internal_error(node_.label() + ": the row-taps conv needs a 1-row input and a 1-row kernel");
    }
    const size_t p = g->wo;
    const WxTasks& tasks = plan_.get(g->n * group_, p, max_strip_, cfg_.nr, panels_, cfg_.mr, mg_, rc.pool.threads());
    const float* x = t.inputs[0]->data<float>();
    float* y = t.outputs[0]->data<float>();
    const float* r = epilogue_.residual ? t.implicit_inputs[0]->data<float>() : nullptr;
    rc.pool.run(tasks.count(), [&](size_t index, size_t worker) {
      const WxTasks::Task k = tasks.task(index, group_, p, mg_);
      const float* xg = x + (k.image * g->c + k.group * cin_) * g->w;
      const size_t out_off = (k.image * m_ + k.group * mg_) * p;
      run_strip(*g, xg, y + out_off, r ? r + out_off : nullptr, k.group, p, k.p0, k.np, k.m0, k.m1,
                rc.scratch.get(worker));
    });
    return ok_status();
  }

 private:
  // One phase row of a strip of np pixels: every panel's NR columns at the largest shift.
  size_t row_floats(size_t np) const { return (np + cfg_.nr - 1) / cfg_.nr * cfg_.nr + max_shift_; }

  void run_strip(const Conv2dGeometry& g, const float* x, float* y, const float* r, size_t gi, size_t p, size_t p0,
                 size_t np, size_t m0, size_t m1, float* ws) const {
    const size_t lp = row_floats(np), s = stride_;
    const ptrdiff_t first = static_cast<ptrdiff_t>(p0 * s) - static_cast<ptrdiff_t>(g.pad_left);
    // Phase ph of channel ci at ws + (ph * Ci + ci) * lp.
    for (size_t ci = 0; ci < cin_; ++ci) {
      float* dst = ws + ci * lp;
      const float* src = x + ci * g.w;
      const size_t phase_stride = cin_ * lp;
      if (s == 1) {
        split_row<1>(src, g.w, s, first, lp, dst, phase_stride);
      } else if (s == 2) {
        split_row<2>(src, g.w, s, first, lp, dst, phase_stride);
      } else {
        split_row<0>(src, g.w, s, first, lp, dst, phase_stride);
      }
    }
    const Activation& act = epilogue_.act;
    kernels::F32GemmEpilogue ep = wx_epilogue(act, p);
    const size_t mr = cfg_.mr, nr = cfg_.nr;
    const size_t npanels = (np + nr - 1) / nr;
    const float* a_group = packed_.data() + gi * panels_ * mr * kg_;
    for (size_t tap = 0; tap < taps_; ++tap) {
      const size_t offset = tap * dilation_;
      const float* b_tap = ws + (offset % s) * cin_ * lp + offset / s;
      for (size_t c0 = 0; c0 < cin_; c0 += cblock_) {
        const size_t kc = std::min(cblock_, cin_ - c0);
        const size_t k0 = tap * cin_ + c0;
        const uint32_t flags = (k0 > 0 ? kernels::kF32GemmLoadC : 0u) | (k0 + kc >= kg_ ? kernels::kF32GemmFinal : 0u);
        const float* b = b_tap + c0 * lp;
        for (size_t mp = m0; mp < m1; mp += mr) {
          const float* a = a_group + (mp / mr) * mr * kg_ + k0 * mr;
          const size_t rows = std::min(mr, m1 - mp);
          ep.row_bias = bias_.empty() ? nullptr : bias_.data() + gi * mg_ + mp;
          for (size_t pn = 0; pn < npanels; ++pn) {
            const size_t off = mp * p + p0 + pn * nr;
            ep.residual = r ? r + off : nullptr;
            cfg_.ukernel(rows, std::min(nr, np - pn * nr), kc, a, b + pn * nr, lp, y + off, p, flags, ep);
          }
          if ((flags & kernels::kF32GemmFinal) && act.needs_pass()) {
            for (size_t m = mp; m < mp + rows; ++m) act.apply(y + m * p + p0, np);
          }
        }
      }
    }
  }

  const ir::Node& node_;
  std::vector<int64_t> w_dims_;
  const kernels::F32GemmConfig& cfg_;
  Epilogue epilogue_;
  size_t group_ = 1, m_ = 0, mg_ = 0, cin_ = 0, taps_ = 0, kg_ = 0, cblock_ = 0, panels_ = 0;
  size_t stride_ = 1, dilation_ = 1, max_shift_ = 0, max_strip_ = 0;
  std::vector<float> bias_;
  PackedFloats packed_;
  Conv2dGeometryCache geo_;
  WxTasksCache plan_;
};

}  // namespace

bool use_row_taps_conv(const ir::Node& node, const ir::Tensor& w) {
  const ConvAlgorithm forced = forced_conv_algorithm();
  if (forced != ConvAlgorithm::kAuto && forced != ConvAlgorithm::kRowTaps) return false;
  if (w.rank() != 4 || w.dim(2) != 1) return false;
  const auto& xs = node.input(0)->type.shape;
  if (!xs.rank_known() || xs.rank() != 4 || !xs[2].is_static() || xs[2].value != 1) return false;
  const auto pads = node.attrs.get_ints("pads", {0, 0, 0, 0});
  if (pads.size() != 4 || pads[0] != 0 || pads[2] != 0) return false;
  const auto strides = node.attrs.get_ints("strides", {1, 1});
  const auto dilations = node.attrs.get_ints("dilations", {1, 1});
  if (strides.size() != 2 || dilations.size() != 2 || strides[1] < 1 || dilations[1] < 1) return false;
  if (forced == ConvAlgorithm::kRowTaps) return true;
  // A 1-tap stride-1 unpadded conv is already read in place by the im2col path.
  const bool pointwise = w.dim(3) == 1 && strides[1] == 1 && pads[1] == 0 && pads[3] == 0;
  return !pointwise && static_cast<size_t>(w.dim(1)) >= kRowTapsMinChannels;
}

Result<std::unique_ptr<CpuOp>> make_row_taps_conv(const ir::Node& node, const ir::Tensor& w, const ir::Tensor* bias,
                                                  Epilogue epilogue, PackStore* packs) {
  auto op = std::make_unique<RowTapsConv>(node, w, bias, std::move(epilogue));
  if (!op->pack(w, packs)) return out_of_memory(node.label() + ": packed weights");
  return std::unique_ptr<CpuOp>(std::move(op));
}

}  // namespace nfuse::backends::cpu
