// Conv on the cpu backend, as a GEMM in the W * X orientation: output channels are GEMM rows
// (the prepacked weight panels, A), pixels are GEMM columns (B), so C is the NCHW output plane
// itself. B is never materialised whole: each task packs a K block of a strip of output pixels
// (im2col for KxK windows, a plain copy for 1x1 stride 1) straight into the microkernel's
// panel layout in its per-thread scratch, then sweeps all its output channels over it.
// 1x1 stride-1 unpadded convolutions skip the packing: the microkernel reads B straight from the
// input planes (row stride H*W) for every full NR-wide panel. The bias (one per GEMM row) and
// the residual enter through the microkernel's epilogue on the first K block, so no pass
// prefills C.
// Depthwise convolutions go to cpu_dwconv.cpp; convolutions over one row (lifted Conv1d) with 16
// or more input channels to cpu_conv_row_taps.cpp, which needs no im2col.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <vector>

#include "backends/cpu/cpu_conv_util.h"
#include "backends/cpu/cpu_dwconv.h"
#include "backends/cpu/cpu_small_channel_conv.h"
#include "kernels/f32-gemm/f32_gemm.h"

namespace nfuse::backends::cpu {

Result<const Conv2dGeometry*> Conv2dGeometryCache::get(const ir::Attributes& attrs,
                                                       const std::vector<int64_t>& x_dims,
                                                       const std::vector<int64_t>& w_dims) {
  if (const Conv2dGeometry* g = cached(x_dims)) return g;
  NFUSE_ASSIGN_OR_RETURN(ops::ConvGeometry g, ops::resolve_conv(attrs, x_dims, w_dims));
  if (g.rank() != 2) return unsupported("cpu conv: only 2-D convolutions");
  auto u = [](int64_t v) { return static_cast<size_t>(v); };
  geo_ = Conv2dGeometry{u(g.batch),      u(g.in_channels),  u(g.in[0]),        u(g.in[1]),
                        u(g.out_channels), u(g.out[0]),     u(g.out[1]),       u(g.group),
                        u(g.kernel[0]),  u(g.kernel[1]),    u(g.strides[0]),   u(g.strides[1]),
                        u(g.dilations[0]), u(g.dilations[1]), u(g.pad_begin[0]), u(g.pad_begin[1])};
  dims_ = x_dims;
  valid_ = true;
  return &geo_;
}

size_t conv_pieces(const ir::Attributes& attrs, const std::vector<int64_t>& x_dims, const std::vector<int64_t>& w_dims,
                   size_t threads, double mac_fraction) {
  auto g = ops::resolve_conv(attrs, x_dims, w_dims);
  if (!g.ok()) return 1;
  double macs = static_cast<double>(g->batch) * mac_fraction;
  for (int64_t d : w_dims) macs *= static_cast<double>(d);  // out channels x weights per output channel
  for (int64_t d : g->out) macs *= static_cast<double>(d);
  return pieces_for_work(macs, threads);
}

Result<Epilogue> read_epilogue(const ir::Node& node) {
  Epilogue e;
  if (!ops::has_fused_epilogue(node)) return e;
  NFUSE_ASSIGN_OR_RETURN(ops::FusedEpilogue f, ops::read_fused_epilogue(node));
  e.act = make_activation(f);
  e.residual = f.residual != nullptr;
  e.fused_bias = f.bias;
  return e;
}

void add_residual_and_activate(float* y, const float* r, size_t n, const Activation& act) {
  if (r) {
    for (size_t i = 0; i < n; ++i) y[i] = std::min(std::max(y[i] + r[i], act.min), act.max);
  } else if (act.min != -std::numeric_limits<float>::infinity() || act.max != std::numeric_limits<float>::infinity()) {
    for (size_t i = 0; i < n; ++i) y[i] = std::min(std::max(y[i], act.min), act.max);
  }
  if (act.needs_pass()) act.apply(y, n);
}

kernels::F32GemmEpilogue wx_epilogue(const Activation& act, size_t p) {
  kernels::F32GemmEpilogue ep;
  ep.min = act.min;
  ep.max = act.max;
  ep.residual_stride = p;
  return ep;
}

WxTasks plan_wx_tasks(size_t outer_units, size_t p, size_t max_strip, size_t nr, size_t panels, size_t mr, size_t rows,
                      size_t threads) {
  WxTasks t;
  t.strip = std::min(max_strip, (p + nr - 1) / nr * nr);
  t.strips = (p + t.strip - 1) / t.strip;
  t.mstep = panels * mr;
  // Few strips: the strip width (whole panels, at most max_strip) and the split of the output
  // channels with which the threads, each taking the next task, finish most nearly together. A
  // task count that divides evenly is not enough: the last strip holds what is left (196
  // pixels as 64, 64, 64 and 4 leave one of two threads idle for a third of the op). A candidate
  // must finish 2% sooner than the best so far to replace it, because each extra strip reads
  // the weights again and each extra chunk reads (or packs) its strip of the input again. With
  // more channels than pixels the weights are the larger read, so more chunks are tried first (a
  // thread then keeps to its part of the weights: MobileNet's 14x14 pointwise layers); otherwise
  // fewer (its 28x28 projections ran slower on 2 threads than on 1 with two chunks;
  // bench/RESULTS.md). Within a chunk count, the widest strips first.
  if (threads > 1 && outer_units * t.strips < 4 * threads) {
    std::vector<size_t> load(threads);
    auto finish = [&](size_t strip, size_t mstep) {  // pixels x rows of the thread that ends last
      const size_t strips = (p + strip - 1) / strip, chunks = (rows + mstep - 1) / mstep;
      std::fill(load.begin(), load.end(), 0);
      for (size_t o = 0; o < outer_units; ++o)
        for (size_t s = 0; s < strips; ++s)
          for (size_t c = 0; c < chunks; ++c)
            *std::min_element(load.begin(), load.end()) +=
                (std::min(p, (s + 1) * strip) - s * strip) * (std::min(rows, (c + 1) * mstep) - c * mstep);
      return *std::max_element(load.begin(), load.end());
    };
    // Within 2% of an even share nothing can replace the plan.
    const size_t even = (outer_units * p * rows + threads - 1) / threads;
    const size_t widest = t.strip, fewest = t.strips;
    const size_t most_strips = std::max(fewest, (4 * threads + outer_units - 1) / outer_units);
    const size_t most_chunks = std::min(panels, threads);
    size_t best = finish(t.strip, t.mstep);
    for (size_t i = 0; i < most_chunks && best * 50 > even * 51; ++i) {
      const size_t mchunks = rows > p ? most_chunks - i : i + 1;
      const size_t mstep = (panels + mchunks - 1) / mchunks * mr;
      // One width per strip count (the narrowest whole-panel width giving it), widest first.
      size_t previous = 0;
      for (size_t count = fewest; count <= most_strips && best * 50 > even * 51; ++count) {
        const size_t strip = ((p + count - 1) / count + nr - 1) / nr * nr;
        if (strip > widest || strip == previous) continue;
        previous = strip;
        const size_t f = finish(strip, mstep);
        if (f * 50 < best * 49) {
          best = f;
          t.strip = strip;
          t.strips = (p + strip - 1) / strip;
          t.mstep = mstep;
        }
      }
    }
  }
  t.outer = outer_units * t.strips;
  t.mchunks = (rows + t.mstep - 1) / t.mstep;
  return t;
}

const WxTasks& WxTasksCache::get(size_t outer_units, size_t p, size_t max_strip, size_t nr, size_t panels, size_t mr,
                                 size_t rows, size_t threads) {
  const std::array<size_t, 8> key{outer_units, p, max_strip, nr, panels, mr, rows, threads};
  if (!valid_ || key != key_) {
    plan_ = plan_wx_tasks(outer_units, p, max_strip, nr, panels, mr, rows, threads);
    key_ = key;
    valid_ = true;
  }
  return plan_;
}

namespace {
std::atomic<ConvAlgorithm> g_forced_algorithm{ConvAlgorithm::kAuto};
}  // namespace

ConvAlgorithm forced_conv_algorithm() { return g_forced_algorithm.load(); }
ScopedConvAlgorithm::ScopedConvAlgorithm(ConvAlgorithm a) : previous_(g_forced_algorithm.exchange(a)) {}
ScopedConvAlgorithm::~ScopedConvAlgorithm() { g_forced_algorithm.store(previous_); }

namespace {

using kernels::F32GemmConfig;

constexpr int64_t kWinogradMinChannels = 16;
constexpr int64_t kWinogradMinTiles = 32;
constexpr size_t kPixelRowsMaxPixels = 256;

// Asks for the next weight panel's K block while the current one computes: each block is read
// once or twice per run, too few times for the hardware prefetcher to lock onto its stream when
// the weights live in L3 or DRAM (the 7x7 and 14x14 layers with 256-512 channels).
inline void prefetch_panel(const float* p, size_t floats) {
  for (size_t i = 0; i < floats; i += 64 / sizeof(float)) __builtin_prefetch(p + i);
}

// Pixels per image of the conv's output where its recorded shape says (0 where it does not).
size_t output_pixels(const ir::Node& node) {
  const auto dims = node.outputs[0]->type.shape.static_dims();
  if (!dims || dims->size() < 3) return 0;
  size_t pixels = 1;
  for (size_t i = 2; i < dims->size(); ++i) pixels *= static_cast<size_t>((*dims)[i]);
  return pixels;
}

class GemmConv final : public CpuOp {
 public:
  GemmConv(const ir::Node& node, const ir::Tensor& w, const ir::Tensor* bias, Epilogue e)
      : node_(node),
        w_dims_(w.dims()),
        // Output channels are the GEMM rows, output pixels its columns: the MR variant that
        // computes them soonest.
        cfg_(kernels::f32_gemm_config_for_rows(
            static_cast<size_t>(w.dim(0)) / static_cast<size_t>(std::max<int64_t>(1, node.attrs.get_int("group", 1))),
            output_pixels(node))),
        epilogue_(std::move(e)) {
    group_ = static_cast<size_t>(node.attrs.get_int("group", 1));
    m_ = static_cast<size_t>(w.dim(0));
    mg_ = m_ / group_;
    kg_ = static_cast<size_t>(w.numel()) / m_;
    // As many K blocks as the weights need, evened out.
    const size_t kblocks = std::max<size_t>(1, (kg_ + cfg_.kc - 1) / cfg_.kc);
    kc_ = (kg_ + kblocks - 1) / kblocks;
    // A strip of pixels whose packed kc x strip block takes ~128 KiB, at least one panel.
    strip_panels_ = std::max<size_t>(1, (128 * 1024 / sizeof(float)) / (kc_ * cfg_.nr));
    panels_ = (mg_ + cfg_.mr - 1) / cfg_.mr;
    if (bias) bias_.assign(bias->data<float>(), bias->data<float>() + m_);
  }

  bool pack(const ir::Tensor& w, const CompileContext& ctx) {
    auto key = [&] { return pack_key("f32.conv.pack_a", *node_.input(1), {cfg_.mr, group_, mg_, kg_, panels_}); };
    return pack_weights(ctx.packs.get(), *node_.input(1), key, group_ * panels_ * cfg_.mr * kg_, &packed_,
                        [&](float* dst) {
                          const float* src = w.data<float>();
                          for (size_t gi = 0; gi < group_; ++gi) {
                            for (size_t p = 0; p < panels_; ++p) {
                              const size_t rows = std::min(cfg_.mr, mg_ - p * cfg_.mr);
                              kernels::f32_gemm_pack_a(cfg_.mr, rows, kg_, src + (gi * mg_ + p * cfg_.mr) * kg_, kg_, 1,
                                                       dst + (gi * panels_ + p) * cfg_.mr * kg_);
                            }
                          }
                        });
  }

  size_t scratch_floats(const OpTensors&, size_t) const override { return kc_ * strip_panels_ * cfg_.nr; }
  size_t pieces(const OpTensors& t, size_t threads) const override {
    return conv_pieces(node_.attrs, t.inputs[0]->dims(), w_dims_, threads);
  }

  Status run(const OpTensors& t, RunContext& rc) override {
    NFUSE_ASSIGN_OR_RETURN(const Conv2dGeometry* g, geo_.get(node_.attrs, t.inputs[0]->dims(), w_dims_));
    const size_t p = g->ho * g->wo;
    const WxTasks& tasks =
        plan_.get(g->n * group_, p, strip_panels_ * cfg_.nr, cfg_.nr, panels_, cfg_.mr, mg_, rc.pool.threads());
    const float* x = t.inputs[0]->data<float>();
    float* y = t.outputs[0]->data<float>();
    const float* r = epilogue_.residual ? t.implicit_inputs[0]->data<float>() : nullptr;
    auto task = [&](size_t index, size_t worker) {
      const WxTasks::Task k = tasks.task(index, group_, p, mg_);
      const float* xg = x + (k.image * g->c + k.group * (g->c / group_)) * g->h * g->w;
      const size_t out_off = (k.image * m_ + k.group * mg_) * p;
      run_tile(*g, xg, y + out_off, r ? r + out_off : nullptr, k.group, p, k.p0, k.np, k.m0, k.m1,
               rc.scratch.get(worker));
    };
    rc.run_tasks(tasks.count(), task);
    return ok_status();
  }

 private:
  void run_tile(const Conv2dGeometry& g, const float* x, float* y, const float* r, size_t gi, size_t p, size_t p0,
                size_t np, size_t m0, size_t m1, float* ws) const {
    const Activation& act = epilogue_.act;
    kernels::F32GemmEpilogue ep = wx_epilogue(act, p);
    const size_t mr = cfg_.mr, nr = cfg_.nr;
    const size_t npanels = (np + nr - 1) / nr;
    const float* a_group = packed_.data() + gi * panels_ * mr * kg_;
    const bool in_place = g.kh * g.kw == 1 && g.sh == 1 && g.sw == 1 && g.pad_top == 0 && g.pad_left == 0 &&
                          g.ho == g.h && g.wo == g.w;
    // Panels read in place (all full ones when in_place) and the packed remainder.
    const size_t direct_panels = in_place ? np / nr : 0;
    for (size_t k0 = 0; k0 < kg_; k0 += kc_) {
      const size_t kc = std::min(kc_, kg_ - k0);
      if (direct_panels < npanels) {
        const size_t q0 = direct_panels * nr;
        pack_im2col(g, x, kg_, k0, kc, p0 + q0, np - q0, nr, ws);
      }
      const uint32_t flags = (k0 > 0 ? kernels::kF32GemmLoadC : 0u) | (k0 + kc >= kg_ ? kernels::kF32GemmFinal : 0u);
      for (size_t mp = m0; mp < m1; mp += mr) {
        const float* a = a_group + (mp / mr) * mr * kg_ + k0 * mr;
        const size_t rows = std::min(mr, m1 - mp);
        if (mp + mr < m1) prefetch_panel(a + mr * kg_, kc * mr);
        ep.row_bias = bias_.empty() ? nullptr : bias_.data() + gi * mg_ + mp;
        for (size_t pn = 0; pn < npanels; ++pn) {
          const size_t off = mp * p + p0 + pn * nr;
          ep.residual = r ? r + off : nullptr;
          const bool direct = pn < direct_panels;
          const float* b = direct ? x + k0 * g.h * g.w + p0 + pn * nr : ws + (pn - direct_panels) * kc * nr;
          cfg_.ukernel(rows, std::min(nr, np - pn * nr), kc, a, b, direct ? g.h * g.w : nr, y + off, p, flags, ep);
        }
        // Activations the clamp cannot express, on this panel's rows while they are still in
        // cache (a pass over the whole strip afterwards reads them back from L2 or L3).
        if ((flags & kernels::kF32GemmFinal) && act.needs_pass()) {
          for (size_t m = mp; m < mp + rows; ++m) act.apply(y + m * p + p0, np);
        }
      }
    }
  }

  const ir::Node& node_;
  std::vector<int64_t> w_dims_;
  const F32GemmConfig& cfg_;
  Epilogue epilogue_;
  size_t group_ = 1, m_ = 0, mg_ = 0, kg_ = 0, kc_ = 0, strip_panels_ = 1, panels_ = 0;
  std::vector<float> bias_;
  PackedFloats packed_;
  Conv2dGeometryCache geo_;
  WxTasksCache plan_;
};

}  // namespace

// Winograd F(4,3) needs 3x3 / stride 1 / dilation 1 / one group; it pays for its transforms
// (linear in channels) with 4x fewer multiplies (quadratic in channels), so it wins once both
// channel counts are large enough and the map has enough 4x4 tiles to fill the GEMM's columns.
// Thresholds from `nfuse bench --profile` on the zoo's 3x3 layers (bench/RESULTS.md).
bool use_winograd(const ir::Node& node, const ir::Shape& w, const ir::Shape& x) {
  const ConvAlgorithm forced = forced_conv_algorithm();
  if (forced == ConvAlgorithm::kIm2colGemm) return false;
  const bool ones = [&] {
    for (const char* a : {"strides", "dilations"})
      for (int64_t v : node.attrs.get_ints(a, {1, 1}))
        if (v != 1) return false;
    return true;
  }();
  if (!w.is_static() || w.rank() != 4 || w[2].value != 3 || w[3].value != 3) return false;
  if (node.attrs.get_int("group", 1) != 1 || !ones) return false;
  if (forced == ConvAlgorithm::kWinograd) return true;
  const int64_t ci = w[1].value, co = w[0].value;
  if (ci < kWinogradMinChannels || co < kWinogradMinChannels) return false;
  if (x.rank_known() && x.rank() == 4 && x[2].is_static() && x[3].is_static()) {
    const int64_t tiles = ((x[2].value + 3) / 4) * ((x[3].value + 3) / 4);
    if (tiles < kWinogradMinTiles) return false;
  }
  return true;
}

bool use_winograd(const ir::Node& node, const ir::Tensor& w) {
  return use_winograd(node, ir::Shape::from_dims(w.dims()), node.input(0)->type.shape);
}

double cpu_mac_fraction(const ir::Node& node, const backends::PlanView& plan) {
  if (node.op_type != "Conv" || !node.input(0) || !node.input(1)) return 1.0;
  return use_winograd(node, plan(node.input(1)).shape, plan(node.input(0)).shape) ? kWinogradMacFraction : 1.0;
}

namespace {

// The X * W orientation (cpu_conv_pixel_rows.cpp) when the output has few pixels and W * X would
// pad them by 10% or more to the microkernel's NR: measured on ResNet's 7x7 and 14x14 stages.
bool use_pixel_rows(const ir::Node& node, const ir::Tensor& w) {
  const ConvAlgorithm forced = forced_conv_algorithm();
  if (node.attrs.get_int("group", 1) != 1 || forced == ConvAlgorithm::kIm2colGemm) return false;
  if (forced == ConvAlgorithm::kPixelRows) return true;
  if (forced != ConvAlgorithm::kAuto) return false;
  const auto x_dims = node.input(0)->type.shape.static_dims();
  if (!x_dims || x_dims->size() != 4) return false;  // unknown until run time: keep W * X
  auto g = ops::resolve_conv(node.attrs, *x_dims, w.dims());
  if (!g.ok() || g->rank() != 2) return false;
  const size_t p = static_cast<size_t>(g->out[0] * g->out[1]);
  const size_t nr = kernels::f32_gemm_config().nr;
  const size_t padded = (p + nr - 1) / nr * nr;
  // A 1x1 stride-1 conv in W * X reads its input in place, while pixel rows pays a transpose
  // of the output: worth it only for a large padding waste (49 pixels as 64), not 196 as 224.
  const bool pointwise = g->kernel[0] * g->kernel[1] == 1 && g->strides[0] == 1 && g->strides[1] == 1;
  const size_t waste_percent = pointwise ? 25 : 10;
  return p <= kPixelRowsMaxPixels && padded * 100 >= p * (100 + waste_percent);
}

}  // namespace

Result<std::unique_ptr<CpuOp>> make_conv(const ir::Node& node, const CompileContext& ctx) {
  const ir::Tensor* w = constant_f32(node.input(1));
  if (!is_f32(node.input(0)) || !w || w->rank() != 4) return std::unique_ptr<CpuOp>();
  const ir::Tensor* bias = nullptr;
  if (node.has_input(2)) {
    bias = constant_f32(node.input(2));
    if (!bias || bias->numel() != w->dim(0)) return std::unique_ptr<CpuOp>();
  }
  const int64_t group = node.attrs.get_int("group", 1);
  if (group < 1 || w->dim(0) % group != 0 || w->numel() == 0) return std::unique_ptr<CpuOp>();
  NFUSE_ASSIGN_OR_RETURN(Epilogue e, read_epilogue(node));
  if (e.fused_bias) return std::unique_ptr<CpuOp>();
  if (group > 1 && w->dim(1) == 1 && w->dim(0) == group) {
    const auto x_dims = ctx.type_of(node.input(0)).shape.static_dims();
    return std::unique_ptr<CpuOp>(
        make_dwconv(node, *w, bias, std::move(e), x_dims ? &*x_dims : nullptr, ctx.packs.get()));
  }
  if (use_winograd(node, *w)) return make_winograd_conv(node, *w, bias, std::move(e), ctx.packs.get());
  if (use_small_channel_conv(node, *w)) return make_small_channel_conv(node, *w, bias, std::move(e));
  if (use_row_taps_conv(node, *w)) return make_row_taps_conv(node, *w, bias, std::move(e), ctx.packs.get());
  if (use_pixel_rows(node, *w)) return make_pixel_rows_conv(node, *w, bias, std::move(e), ctx.packs.get());
  auto op = std::make_unique<GemmConv>(node, *w, bias, std::move(e));
  if (!op->pack(*w, ctx)) return out_of_memory(node.label() + ": packed weights");
  return std::unique_ptr<CpuOp>(std::move(op));
}

}  // namespace nfuse::backends::cpu
