// 3x3 stride-1 Conv on the cpu backend by Winograd F(4x4, 3x3) (cpu_winograd.h): blocks of
// tiles sized so the transformed inputs and products (36 x (Ci + Co) x T floats) stay near the
// core's L2; each thread owns whole blocks, so no transform is computed twice.
#include <algorithm>
#include <cstring>

#include "backends/cpu/cpu_conv_util.h"
#include "backends/cpu/cpu_winograd.h"
#include "kernels/cpu_features.h"

namespace nfuse::backends::cpu {
namespace {

using kernels::kWino43Points;

size_t div_up(size_t a, size_t b) { return (a + b - 1) / b; }

// The input transform walks channel after channel, six short row pieces each, a plane apart:
// hundreds of streams too short for the hardware prefetcher, so each piece's first loads waited
// on L3 or DRAM. Prefetching the pieces of the channel this many ahead: a 3x3 96 -> 24 conv at
// 240x240 8.8 -> 6.3 ms, ESPCN 25.9 -> 22.8 ms; ResNets (channels-heavy, small planes) unchanged.
constexpr size_t kPrefetchChannels = 2;

}  // namespace

bool Winograd43::init(const ir::Tensor& w, const ir::Tensor* bias, Activation act, PackStore* packs,
                      const ir::Value* weight) {
  co_ = static_cast<size_t>(w.dim(0));
  ci_ = static_cast<size_t>(w.dim(1));
  cfg_ = &kernels::f32_gemm_config_for_rows(co_);
  wino_ = kernels::f32_wino43_kernels(kernels::selected_isa());
  act_ = std::move(act);
  panels_ = div_up(co_, cfg_->mr);
  const size_t kblocks = div_up(ci_, cfg_->kc);
  kc_ = div_up(ci_, kblocks);
  bias_.assign(co_, 0.0f);
  if (bias) std::copy(bias->data<float>(), bias->data<float>() + co_, bias_.begin());
  // Every 3x3 filter transformed into its 36 positions; each position's Co x Ci matrix packed
  // into the GEMM's mr-row panels.
  auto fill = [&](float* dst) {
    std::vector<float> u(kWino43Points * co_ * ci_);  // u[xi][co][ci]
    const float* g = w.data<float>();
    for (size_t o = 0; o < co_; ++o)
      for (size_t i = 0; i < ci_; ++i) kernels::f32_wino43_weights(g + (o * ci_ + i) * 9, &u[o * ci_ + i], co_ * ci_);
    for (size_t xi = 0; xi < kWino43Points; ++xi) {
      for (size_t p = 0; p < panels_; ++p) {
        const size_t rows = std::min(cfg_->mr, co_ - p * cfg_->mr);
        kernels::f32_gemm_pack_a(cfg_->mr, rows, ci_, &u[(xi * co_ + p * cfg_->mr) * ci_], ci_, 1,
                                 dst + (xi * panels_ + p) * cfg_->mr * ci_);
      }
    }
  };
  auto key = [&] { return pack_key("f32.wino43.pack_a", *weight, {cfg_->mr, co_, ci_, panels_}); };
  const size_t floats = kWino43Points * panels_ * cfg_->mr * ci_;
  if (!weight) {  // not a graph value (a test's tensor): nothing to key it by
    if (!packed_.resize(floats)) return false;
    fill(packed_.data());
    return true;
  }
  return pack_weights(packs, *weight, key, floats, &packed_, fill);
}

// About one L2 of transformed inputs and products per block, at least one panel of tiles.
// (Measured on the zoo's 3x3 layers: 0.5-2 MiB blocks on a 1 MiB L2 are within noise.)
size_t Winograd43::max_block_tiles() const {
  const size_t per_tile = kWino43Points * (ci_ + co_) * sizeof(float);
  return std::max<size_t>(1, kernels::cpu_features().l2_bytes / per_tile / cfg_->nr) * cfg_->nr;
}

size_t Winograd43::scratch_floats(size_t tiles, size_t wo) const {
  const size_t tp = div_up(tiles, cfg_->nr) * cfg_->nr;
  const size_t seg_ws = std::max(kernels::f32_wino43_input_workspace_floats(tiles),
                                 kernels::f32_wino43_output_workspace_floats(tiles));
  return kWino43Points * ((ci_ + co_) * tp + 2 * kSkew) + seg_ws + wo + 16;
}

void Winograd43::run(const Plane& g, const ConstPlaneRows& x, const PlaneRows& y, const ConstPlaneRows* r, size_t j0,
                     size_t j1, size_t y0, size_t y1, float* ws) const {
  const size_t nr = cfg_->nr, mr = cfg_->mr, tiles_x = g.tiles_x();
  const size_t count = j1 - j0, tp = div_up(count, nr) * nr;
  // The 36 positions' slices are kSkew floats more than a multiple of the page size apart, so
  // the transforms' 36 concurrent streams do not all land in the same L1 set.
  const size_t v_stride = ci_ * tp + kSkew, m_stride = co_ * tp + kSkew;
  float* v = ws;                            // [xi][panel][ci][nr]
  float* m = v + kWino43Points * v_stride;  // [xi][co][tp]
  float* tw = m + kWino43Points * m_stride; // transform workspace
  float* discard = tw + std::max(kernels::f32_wino43_input_workspace_floats(count),
                                 kernels::f32_wino43_output_workspace_floats(count));  // rows not stored

  // Input transforms, straight into the GEMM's B panels, one tile row (or its part in this
  // call) per call of the transform.
  for (size_t j = j0; j < j1;) {
    const size_t ty = j / tiles_x, tx = j % tiles_x, cnt = std::min(tiles_x - tx, j1 - j);
    // The input columns these tiles read.
    const long long x_lo = std::max(0LL, static_cast<long long>(4 * tx) - static_cast<long long>(g.pad_left));
    const long long x_hi = std::min(static_cast<long long>(g.w),
                                    static_cast<long long>(4 * (tx + cnt) + 2) - static_cast<long long>(g.pad_left));
    for (size_t c = 0; c < ci_; ++c) {
      kernels::F32Wino43InputArgs a;
      for (size_t rr = 0; rr < 6; ++rr) {
        const long long iy = static_cast<long long>(4 * ty + rr) - static_cast<long long>(g.pad_top);
        a.rows[rr] = iy >= 0 && iy < static_cast<long long>(g.h) ? x.row(c, static_cast<size_t>(iy)) : nullptr;
        if (a.rows[rr] && c + kPrefetchChannels < ci_ && x_hi > x_lo) {
          const float* next = x.row(c + kPrefetchChannels, static_cast<size_t>(iy));
          for (long long xx = x_lo; xx < x_hi; xx += 16) __builtin_prefetch(next + xx);
          __builtin_prefetch(next + x_hi - 1);
        }
      }
      a.width = g.w;
      a.pad_left = g.pad_left;
      a.tx0 = tx;
      a.count = cnt;
      a.v = v + c * nr;
      a.v_stride = v_stride;
      a.col0 = j - j0;
      a.panel_width = nr;
      a.panel_stride = ci_ * nr;
      a.workspace = tw;
      wino_.input(a);
    }
    j += cnt;
  }

  // 36 GEMMs: m[xi] (Co x count) = U[xi] (Co x Ci) * V[xi] (Ci x count).
  kernels::F32GemmEpilogue ep;
  const size_t col_panels = div_up(count, nr);
  for (size_t xi = 0; xi < kWino43Points; ++xi) {
    const float* ax = packed_.data() + xi * panels_ * mr * ci_;
    const float* vx = v + xi * v_stride;
    float* mx = m + xi * m_stride;
    for (size_t k0 = 0; k0 < ci_; k0 += kc_) {
      const size_t kc = std::min(kc_, ci_ - k0);
      const uint32_t flags = (k0 > 0 ? kernels::kF32GemmLoadC : 0u) | (k0 + kc >= ci_ ? kernels::kF32GemmFinal : 0u);
      for (size_t p = 0; p < panels_; ++p) {
        const float* a = ax + p * mr * ci_ + k0 * mr;
        const size_t rows = std::min(mr, co_ - p * mr);
        for (size_t pn = 0; pn < col_panels; ++pn) {
          cfg_->ukernel(rows, std::min(nr, count - pn * nr), kc, a, vx + pn * ci_ * nr + k0 * nr, nr,
                        mx + p * mr * tp + pn * nr, tp, flags, ep);
        }
      }
    }
  }

  // Output transforms with the epilogue.
  for (size_t o = 0; o < co_; ++o) {
    for (size_t j = j0; j < j1;) {
      const size_t ty = j / tiles_x, tx = j % tiles_x, cnt = std::min(tiles_x - tx, j1 - j);
      kernels::F32Wino43OutputArgs a;
      a.m = m + o * tp + (j - j0);
      a.m_stride = m_stride;
      a.tx0 = tx;
      a.count = cnt;
      a.out_rows = std::min<size_t>(4, g.ho - 4 * ty);
      for (size_t rr = 0; rr < a.out_rows; ++rr) {
        const size_t oy = 4 * ty + rr;
        const bool keep = oy >= y0 && oy < y1;
        a.rows[rr] = keep ? y.row(o, oy) : discard;
        a.residual_rows[rr] = r ? (keep ? r->row(o, oy) : discard) : nullptr;
      }
      a.width = g.wo;
      a.bias = bias_[o];
      a.min = act_.min;
      a.max = act_.max;
      a.workspace = tw;
      wino_.output(a);
      if (act_.needs_pass()) {
        const size_t x0 = 4 * tx, x1 = std::min(g.wo, 4 * (tx + cnt));
        for (size_t rr = 0; rr < a.out_rows; ++rr) act_.apply(a.rows[rr] + x0, x1 - x0);
      }
      j += cnt;
    }
  }
}

namespace {

class WinogradConv final : public CpuOp {
 public:
  WinogradConv(const ir::Node& node, const ir::Tensor& w, Epilogue e)
      : node_(node), w_dims_(w.dims()), epilogue_(std::move(e)) {}

  bool init(const ir::Tensor& w, const ir::Tensor* bias, PackStore* packs) {
    return wino_.init(w, bias, epilogue_.act, packs, node_.input(1));
  }

  // The largest block any input size gets (blocking() only ever shrinks it), for any width up to
  // what the plan has seen; asked before every run, so it costs nothing.
  size_t scratch_floats(const OpTensors& t, size_t) const override {
    const size_t wo = t.outputs.empty() || !t.outputs[0] || t.outputs[0]->rank() != 4
                          ? 4096
                          : static_cast<size_t>(t.outputs[0]->dims()[3]);
    return wino_.scratch_floats(wino_.max_block_tiles(), wo);
  }

  size_t pieces(const OpTensors& t, size_t threads) const override {
    return conv_pieces(node_.attrs, t.inputs[0]->dims(), w_dims_, threads, kWinogradMacFraction);
  }

  Status run(const OpTensors& t, RunContext& rc) override {
    NFUSE_ASSIGN_OR_RETURN(const Conv2dGeometry* g, geo_.get(node_.attrs, t.inputs[0]->dims(), w_dims_));
    const Winograd43::Plane plane{g->h, g->w, g->ho, g->wo, g->pad_top, g->pad_left};
    const size_t tiles = plane.tiles();
    // As few blocks as the L2 budget allows; with threads, a block count that splits evenly
    // across them (49 tiles on 2 threads: 25 + 24, not 32 + 17), since a block is one task.
    size_t blocks = div_up(tiles, wino_.max_block_tiles());
    const size_t threads = rc.pool.threads();
    if (threads > 1 && g->n * blocks < 4 * threads) {
      const size_t tasks = div_up(std::max(g->n * blocks, threads), threads) * threads;
      blocks = std::min(tiles, div_up(tasks, g->n));
    }
    const size_t per_block = div_up(tiles, blocks);
    blocks = div_up(tiles, per_block);
    const float* x = t.inputs[0]->data<float>();
    float* y = t.outputs[0]->data<float>();
    const float* r = epilogue_.residual ? t.implicit_inputs[0]->data<float>() : nullptr;
    const size_t ci = wino_.in_channels(), co = wino_.out_channels();
    auto task = [&](size_t index, size_t worker) {
      const size_t n = index / blocks, blk = index % blocks;
      const size_t j0 = blk * per_block, j1 = std::min(tiles, j0 + per_block);
      const size_t out_off = n * co * g->ho * g->wo;
      const ConstPlaneRows xv{x + n * ci * g->h * g->w, g->h * g->w, g->w, 0};
      const PlaneRows yv{y + out_off, g->ho * g->wo, g->wo, 0};
      const ConstPlaneRows rv{r ? r + out_off : nullptr, g->ho * g->wo, g->wo, 0};
      wino_.run(plane, xv, yv, r ? &rv : nullptr, j0, j1, 0, g->ho, rc.scratch.get(worker));
    };
    rc.run_tasks(g->n * blocks, task);
    return ok_status();
  }

 private:
  const ir::Node& node_;
  std::vector<int64_t> w_dims_;
  Epilogue epilogue_;
  Winograd43 wino_;
  Conv2dGeometryCache geo_;
};

}  // namespace

bool winograd_eligible(const Conv2dGeometry& g) {
  return g.kh == 3 && g.kw == 3 && g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1 && g.group == 1;
}

Result<std::unique_ptr<CpuOp>> make_winograd_conv(const ir::Node& node, const ir::Tensor& w, const ir::Tensor* bias,
                                                  Epilogue epilogue, PackStore* packs) {
  auto op = std::make_unique<WinogradConv>(node, w, std::move(epilogue));
  if (!op->init(w, bias, packs)) return out_of_memory(node.label() + ": Winograd-transformed weights");
  return std::unique_ptr<CpuOp>(std::move(op));
}

}  // namespace nfuse::backends::cpu
