// Conv as fusion-group members: dense and grouped convolutions as a W * X GEMM over a strip of
// output rows (the cpu backend's microkernels and weight panels), depthwise ones on the direct
// f32-dwconv kernels, whose [y0, y1) row range exists for exactly this; 3x3 ones by Winograd and
// few-channel stems directly, wherever the cpu backend runs them so.
//
// The GEMM's B operand is a chunk of the strip's output pixels: for 1x1 stride-1 unpadded
// convolutions the microkernel reads full NR-wide panels straight out of the input rows (the
// line buffer's plane stride is the B row stride); everything else is packed by an im2col over
// the strip's input rows, which may live in a line buffer whose first row is not image row 0.
#include <algorithm>
#include <cstring>

#include "backends/cpu/cpu_conv_util.h"
#include "backends/cpu/cpu_small_channel_conv.h"
#include "backends/cpu/cpu_winograd.h"
#include "backends/fusion/strip_layer_impl.h"
#include "core/aligned_storage.h"
#include "kernels/f32-dwconv/f32_dwconv.h"
#include "kernels/f32-gemm/f32_gemm.h"
#include "kernels/f32-im2col/f32_im2col.h"

namespace nfuse::backends::fusion {
namespace {

constexpr size_t kPackedBlockFloats = 128 * 1024 / sizeof(float);  // a packed B block: L2-resident

class StripGemmConv final : public WindowedLayer {
 public:
  StripGemmConv(const ops::ConvGeometry& g, const ir::Tensor* bias, cpu::Epilogue e)
      : WindowedLayer(g), cfg_(kernels::f32_gemm_config_for_rows(static_cast<size_t>(g.out_channels / g.group))),
        epilogue_(std::move(e)) {
    group_ = static_cast<size_t>(g.group);
    mg_ = static_cast<size_t>(g.out_channels) / group_;
    cg_ = static_cast<size_t>(g.in_channels) / group_;
    kg_ = cg_ * kh_ * kw_;
    const size_t kblocks = std::max<size_t>(1, (kg_ + cfg_.kc - 1) / cfg_.kc);
    kc_ = (kg_ + kblocks - 1) / kblocks;
    panels_ = (mg_ + cfg_.mr - 1) / cfg_.mr;
    chunk_ = std::max<size_t>(1, kPackedBlockFloats / (kc_ * cfg_.nr)) * cfg_.nr;
    direct_ = kh_ == 1 && kw_ == 1 && sh_ == 1 && sw_ == 1 && pt_ == 0 && pl_ == 0 && out.w == in.w;
    if (bias) bias_.assign(bias->data<float>(), bias->data<float>() + bias->numel());
  }

  bool pack(const ir::Tensor& w, PackStore* packs, const ir::Value& weight) {
    auto key = [&] { return pack_key("f32.conv.pack_a", weight, {cfg_.mr, group_, mg_, kg_, panels_}); };
    return pack_weights(packs, weight, key, group_ * panels_ * cfg_.mr * kg_, &packed_, [&](float* dst) {
      const float* src = w.data<float>();
      for (size_t gi = 0; gi < group_; ++gi)
        for (size_t p = 0; p < panels_; ++p) {
          const size_t rows = std::min(cfg_.mr, mg_ - p * cfg_.mr);
          kernels::f32_gemm_pack_a(cfg_.mr, rows, kg_, src + (gi * mg_ + p * cfg_.mr) * kg_, kg_, 1,
                                   dst + (gi * panels_ + p) * cfg_.mr * kg_);
        }
    });
  }

  size_t scratch_floats(size_t rows) const override {
    const size_t np = rows * out.w;
    return kc_ * std::min(chunk_, (np + cfg_.nr - 1) / cfg_.nr * cfg_.nr);
  }


  void run(const RowView& x, const std::vector<RowView>& ext, const RowView& y, size_t y0, size_t y1,
           float* ws) const override {
    const size_t np = (y1 - y0) * out.w, nr = cfg_.nr, mr = cfg_.mr;
    const RowView* r = epilogue_.residual ? &ext[0] : nullptr;
    const cpu::Activation& act = epilogue_.act;
    kernels::F32GemmEpilogue ep;
    ep.min = act.min;
    ep.max = act.max;
    ep.residual_stride = r ? r->plane_stride : 0;
    for (size_t gi = 0; gi < group_; ++gi) {
      const float* a_group = packed_.data() + gi * panels_ * mr * kg_;
      for (size_t q0 = 0; q0 < np; q0 += chunk_) {
        const size_t nq = std::min(chunk_, np - q0);
        const size_t npanels = (nq + nr - 1) / nr;
        const size_t direct_panels = direct_ ? nq / nr : 0;
        for (size_t k0 = 0; k0 < kg_; k0 += kc_) {
          const size_t kc = std::min(kc_, kg_ - k0);
          if (direct_panels < npanels) pack_b(x, gi, k0, kc, y0, q0 + direct_panels * nr, nq - direct_panels * nr, ws);
          const uint32_t flags =
              (k0 > 0 ? kernels::kF32GemmLoadC : 0u) | (k0 + kc >= kg_ ? kernels::kF32GemmFinal : 0u);
          for (size_t mp = 0; mp < mg_; mp += mr) {
            const size_t rows = std::min(mr, mg_ - mp), m = gi * mg_ + mp;
            const float* a = a_group + (mp / mr) * mr * kg_ + k0 * mr;
            // The next weight panel, requested early: a strip sweeps all weights but reads each
            // panel once, too few times for the hardware prefetcher when they come from L3.
            if (mp + mr < mg_)
              for (size_t i = 0; i < kc * mr; i += 64 / sizeof(float)) __builtin_prefetch(a + mr * kg_ + i);
            ep.row_bias = bias_.empty() ? nullptr : bias_.data() + m;
            for (size_t pn = 0; pn < npanels; ++pn) {
              const size_t q = q0 + pn * nr;
              ep.residual = r ? r->row(m, y0) + q : nullptr;
              const bool direct = pn < direct_panels;
              const float* b = direct ? x.row(gi * cg_ + k0, y0) + q : ws + (pn - direct_panels) * kc * nr;
              cfg_.ukernel(rows, std::min(nr, nq - pn * nr), kc, a, b, direct ? x.plane_stride : nr, y.row(m, y0) + q,
                           y.plane_stride, flags, ep);
            }
            if ((flags & kernels::kF32GemmFinal) && act.needs_pass())
              for (size_t i = 0; i < rows; ++i) act.apply(y.row(m + i, y0) + q0, nq);
          }
        }
      }
    }
  }

 private:
  // Packs K rows [k0, k0 + kc) of group gi's im2col matrix for strip pixels [q0, q0 + nq) (pixel
  // q = (oy - y0) * out.w + ox) into NR-wide panels, zero past nq and in the padding: the cpu
  // backend's im2col kernel, told where the line buffer's rows are.
  void pack_b(const RowView& x, size_t gi, size_t k0, size_t kc, size_t y0, size_t q0, size_t nq, float* dst) const {
    const kernels::F32Im2colGeometry g{in.h, in.w, out.h, out.w, kh_, kw_, sh_, sw_, dh_, dw_, pt_, pl_,
                                       x.plane_stride, x.base};
    im2col_(g, x.row(gi * cg_, x.base), kg_, k0, kc, y0 * out.w + q0, nq, cfg_.nr, dst);
  }

  const kernels::F32GemmConfig& cfg_;
  const kernels::F32Im2colFn im2col_ = kernels::f32_im2col_select();
  cpu::Epilogue epilogue_;
  size_t group_ = 1, mg_ = 0, cg_ = 0, kg_ = 0, kc_ = 0, panels_ = 0, chunk_ = 0;
  bool direct_ = false;
  std::vector<float> bias_;
  PackedFloats packed_;
};

class StripDwConv final : public WindowedLayer {
 public:
  StripDwConv(const ops::ConvGeometry& g, const ir::Tensor& w, const ir::Tensor* bias, cpu::Epilogue e)
      : WindowedLayer(g),
        epilogue_(std::move(e)),
        weights_(PackedFloats::borrow(w.data<float>(), static_cast<size_t>(w.numel()), nullptr)) {
    if (bias) bias_ = PackedFloats::borrow(bias->data<float>(), static_cast<size_t>(bias->numel()), nullptr);
    fn_ = kernels::f32_dwconv_select(kernels::selected_isa(), kh_, kw_, sh_, sw_, dh_, dw_);
  }

  size_t scratch_floats(size_t rows) const override { return copy_rows() ? window_rows(rows) * padded_stride() : 0; }

  void run(const RowView& x, const std::vector<RowView>& ext, const RowView& y, size_t y0, size_t y1,
           float* ws) const override {
    const RowRange need = input_rows(y0, y1);
    const size_t local_pad = pt_ > y0 * sh_ ? pt_ - y0 * sh_ : 0;
    const bool copy = copy_rows();
    const size_t rows = window_rows(y1 - y0), stride = padded_stride();
    const int64_t first = static_cast<int64_t>(y0 * sh_) - static_cast<int64_t>(pt_);
    const cpu::Activation& act = epilogue_.act;
    const RowView* r = epilogue_.residual ? &ext[0] : nullptr;
    const bool hswish_in_store = !r && act.kind == ops::FusedActivation::kHardSwish;
    const size_t n = (y1 - y0) * out.w;
    for (size_t c = 0; c < out.c; ++c) {
      kernels::F32DwconvParams p;
      if (copy) {
        // Narrow rows: the window's rows copied with their zero padding into L1 scratch, so every
        // kernel step is a plain one (in place, a 60-wide row is mostly masked edge steps).
        const size_t left = std::min(pl_, stride), n_copy = std::min(in.w, stride - left);
        fill_padded_window(ws, rows, stride, left, n_copy, first, in.h, [&](float* d, size_t iy) {
          std::memcpy(d, x.row(c, iy), n_copy * sizeof(float));
        });
        p.in = ws;
        p.in_stride = stride;
        p.in_height = rows;
        p.in_width = stride;
      } else {
        // The sub-problem "output rows from y0" starts its input at the first row it reads.
        p.in = need.size() ? x.row(c, need.lo) : x.row(c, x.base);
        p.in_stride = x.width;
        p.in_height = in.h - std::min(in.h, need.lo);
        p.in_width = in.w;
        p.pad_top = local_pad;
        p.pad_left = pl_;
      }
      p.w = weights_.data() + c * kh_ * kw_;
      p.bias = bias_.data() ? bias_.data()[c] : 0.0f;
      p.out = y.row(c, y0);
      p.out_stride = y.width;
      p.out_width = out.w;
      set_window(&p);
      if (!r) {
        p.min = act.min;
        p.max = act.max;
      }
      if (hswish_in_store) {
        p.act = kernels::F32DwconvAct::kHardSwish;
        p.act_a = act.params[0];
        p.act_b = act.params[1];
      }
      fn_(p, 0, y1 - y0);
      if (r) {
        cpu::add_residual_and_activate(p.out, r->row(c, y0), n, act);
      } else if (hswish_in_store) {
        act.apply_affine(p.out, n);  // the kernel applied the HardSwish, not what follows it
      } else if (act.needs_pass()) {
        act.apply(p.out, n);
      }
    }
  }

 private:
  // Rows narrower than this run on a padded copy (the cpu backend's measured crossover).
  static constexpr size_t kCopyMaxWidth = 112;
  bool copy_rows() const { return in.w < kCopyMaxWidth; }
  // Input rows of the padded window of `rows` output rows, and its row stride (16-float
  // aligned with 32 zeros of slack so a partial last 16-wide stride-2 step stays in the row).
  size_t window_rows(size_t rows) const { return (rows - 1) * sh_ + (kh_ - 1) * dh_ + 1; }
  size_t padded_stride() const { return ((out.w - 1) * sw_ + (kw_ - 1) * dw_ + 1 + 32 + 15) / 16 * 16; }

  cpu::Epilogue epilogue_;
  PackedFloats weights_, bias_;  // the node's constants, read in place (bias: none when null)
  kernels::F32DwconvFn fn_ = nullptr;
};

// The 3x3 stride-1 convolutions the cpu backend runs by Winograd F(4x4, 3x3), run the same way
// over strips of whole 4-row tile rows (the engine asks for those), in blocks of tiles sized to
// L2 as the cpu backend's.
class StripWinogradConv final : public WindowedLayer {
 public:
  explicit StripWinogradConv(const ops::ConvGeometry& g) : WindowedLayer(g) {}
  cpu::Winograd43 kernel;

  size_t row_granularity() const override { return 4; }
  RowRange input_rows(size_t y0, size_t y1) const override {
    if (y1 <= y0) return {0, 0};
    return WindowedLayer::input_rows(y0 / 4 * 4, std::min(out.h, (y1 + 3) / 4 * 4));
  }
  size_t scratch_floats(size_t rows) const override {
    const size_t tiles = ((rows + 3) / 4 + 1) * ((out.w + 3) / 4);
    return kernel.scratch_floats(std::min(tiles, kernel.max_block_tiles()), out.w);
  }

  void run(const RowView& x, const std::vector<RowView>& ext, const RowView& y, size_t y0, size_t y1,
           float* ws) const override {
    const cpu::Winograd43::Plane plane{in.h, in.w, out.h, out.w, pt_, pl_};
    const size_t tiles_x = plane.tiles_x();
    const size_t j_end = std::min(plane.tiles(), (y1 + 3) / 4 * tiles_x), block = kernel.max_block_tiles();
    const cpu::ConstPlaneRows xv = plane_rows<const float>(x), rv = ext.empty() ? cpu::ConstPlaneRows{}
                                                                               : plane_rows<const float>(ext[0]);
    const cpu::PlaneRows yv = plane_rows<float>(y);
    for (size_t j = y0 / 4 * tiles_x; j < j_end; j += block)  // the residual, when fused, is externals[0]
      kernel.run(plane, xv, yv, ext.empty() ? nullptr : &rv, j, std::min(j_end, j + block), y0, y1, ws);
  }
};

// Convolutions of few input channels (a stem) the cpu backend runs directly, run the same way
// on the strip's rows.
class StripSmallChannelConv final : public WindowedLayer {
 public:
  explicit StripSmallChannelConv(const ops::ConvGeometry& g) : WindowedLayer(g) {}
  cpu::SmallChannelConv kernel;

  size_t scratch_floats(size_t) const override { return kernel.scratch_floats(out.w); }

  void run(const RowView& x, const std::vector<RowView>&, const RowView& y, size_t y0, size_t y1,
           float* ws) const override {
    const cpu::SmallChannelConv::Plane plane{in.h, in.w, out.h, out.w, kh_, kw_, sh_, sw_, pt_, pl_};
    kernel.run(plane, plane_rows<const float>(x), plane_rows<float>(y), y0, y1, ws);
  }
};

}  // namespace

Result<std::unique_ptr<StripLayer>> make_strip_conv(const ir::Node& node, const PlanView& type_of, PackStore* packs) {
  const ir::Tensor& w = *node.input(1)->constant;
  const ir::Tensor* bias = node.has_input(2) ? &*node.input(2)->constant : nullptr;
  auto x_dims = type_of(node.input(0)).shape.static_dims();
  NFUSE_ASSIGN_OR_RETURN(ops::ConvGeometry g, ops::resolve_conv(node.attrs, *x_dims, w.dims()));
  NFUSE_ASSIGN_OR_RETURN(cpu::Epilogue e, cpu::read_epilogue(node));
  std::unique_ptr<StripLayer> layer;
  if (g.group > 1 && g.group == g.in_channels && g.group == g.out_channels) {
    layer = std::make_unique<StripDwConv>(g, w, bias, std::move(e));
  } else if (cpu::use_winograd(node, w)) {
    auto conv = std::make_unique<StripWinogradConv>(g);
    if (!conv->kernel.init(w, bias, e.act, packs, node.input(1)))
      return out_of_memory(node.label() + ": Winograd-transformed weights");
    layer = std::move(conv);
  } else if (cpu::use_small_channel_conv(node, w)) {
    auto conv = std::make_unique<StripSmallChannelConv>(g);
    conv->kernel.init(w, bias, e.act);
    layer = std::move(conv);
  } else {
    auto conv = std::make_unique<StripGemmConv>(g, bias, std::move(e));
    if (!conv->pack(w, packs, *node.input(1))) return out_of_memory(node.label() + ": packed weights");
    layer = std::move(conv);
  }
  return layer;
}

}  // namespace nfuse::backends::fusion
