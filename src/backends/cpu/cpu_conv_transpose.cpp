// ConvTranspose on the cpu backend for 2-D f32 NCHW with constant weights, as GEMM + col2im
// (the Caffe / ncnn scheme). Per image and group:
//
//   col[(co*kh + ky)*kw + kx][p] = sum_ci W[ci][co][ky][kx] * X[ci][p]     (GEMM, K = Ci/group)
//   Y[co][iy*sh + ky*dh - pad_top][ix*sw + kx*dw - pad_left] += col[(co, ky, kx)][iy*W + ix]
//
// The weights are the prepacked A panels (rows = output channel x tap, K = input channels), the
// input plane is B, packed per strip of input pixels straight from the NCHW rows into the
// microkernel's kc x nr panels. col lives only per strip in the per-thread scratch and is
// scattered into Y right after it is computed.
//
// Tasks: image x group x output-channel chunk x output-row band. Channel chunks are fixed at
// compile time (A is packed per chunk, so panels start at chunk boundaries); row bands are chosen
// per run for the thread count. A task owns its chunk's channels over its band's output rows and
// computes every input row that reaches them (input rows near a band boundary are computed by
// both neighbours when the dilated kernel is taller than the stride, and each scatters only its
// own rows), so no two tasks write the same output element. Each task fills its region with the
// bias, scatters into it, then applies the fused residual and activation to it.
//
// When the taps do not overlap (kernel == stride, no padding: the 2x2 stride-2 upsampling of
// segmentation heads) and the input dims are known at compile time, UpsampleDeconv writes each
// output element once instead, over bands of output rows.
#include <algorithm>
#include <cstring>

#include "backends/cpu/cpu_conv_util.h"
#include "backends/cpu/cpu_upsample_deconv.h"
#include "backends/pack_store.h"
#include "kernels/f32-gemm/f32_gemm.h"

namespace nfuse::backends::cpu {
namespace {

using kernels::F32GemmConfig;

// Rows of col (output channels x taps) per chunk at most, so col stays a modest scratch block.
constexpr size_t kMaxChunkRows = 1024;
// Floats of per-thread scratch a strip aims for (packed B plus col).
constexpr size_t kStripFloats = 48 * 1024;

struct TransposeGeometry {
  size_t n = 0, ci = 0, h = 0, w = 0;  // input
  size_t co = 0, ho = 0, wo = 0;       // output
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, pad_top = 0, pad_left = 0;
};

class ConvTranspose2d final : public CpuOp {
 public:
  ConvTranspose2d(const ir::Node& node, const ir::Tensor& w, const ir::Tensor* bias, Epilogue e, size_t threads)
      : node_(node), w_dims_(w.dims()), epilogue_(std::move(e)) {
    group_ = static_cast<size_t>(node.attrs.get_int("group", 1));
    cig_ = static_cast<size_t>(w.dim(0)) / group_;
    cog_ = static_cast<size_t>(w.dim(1));
    kh_ = static_cast<size_t>(w.dim(2));
    kw_ = static_cast<size_t>(w.dim(3));
    khw_ = kh_ * kw_;
    co_ = cog_ * group_;
    if (bias) bias_.assign(bias->data<float>(), bias->data<float>() + co_);
    // Output-channel chunks: enough to bound col, and with several threads but few channel
    // rows per image, a few more so that small planes still split.
    size_t chunks = (cog_ * khw_ + kMaxChunkRows - 1) / kMaxChunkRows;
    if (threads > 1 && group_ < threads) chunks = std::max(chunks, std::min(cog_, (threads + group_ - 1) / group_));
    chunks = std::clamp<size_t>(chunks, 1, cog_);
    chunk_co_ = (cog_ + chunks - 1) / chunks;
    chunks_ = (cog_ + chunk_co_ - 1) / chunk_co_;
    cfg_ = &kernels::f32_gemm_config_for_rows(chunk_co_ * khw_);
    const size_t kblocks = std::max<size_t>(1, (cig_ + cfg_->kc - 1) / cfg_->kc);
    kc_ = (cig_ + kblocks - 1) / kblocks;
    chunk_rows_ = chunk_co_ * khw_;
    chunk_panels_ = (chunk_rows_ + cfg_->mr - 1) / cfg_->mr;
    const size_t per_pixel = kc_ + chunk_rows_;
    strip_panels_ = std::max<size_t>(1, kStripFloats / (per_pixel * cfg_->nr));
  }

  // A[r][ci] = W[g*cig + ci][co][ky][kx] with r = (co*kh + ky)*kw + kx: row stride 1, column
  // stride cog*kh*kw. One run of panels per (group, chunk). Through `packs` when given (the key
  // names the chunking, which the thread count chose).
  bool pack(const ir::Tensor& w, PackStore* packs) {
    const size_t mr = cfg_->mr;
    auto fill = [&](float* packed) {
      const float* src = w.data<float>();
      const size_t col_stride = cog_ * khw_;
      for (size_t gi = 0; gi < group_; ++gi) {
        for (size_t c = 0; c < chunks_; ++c) {
          const size_t r0 = c * chunk_rows_, r1 = std::min(cog_, (c + 1) * chunk_co_) * khw_;
          for (size_t p = 0; p < chunk_panels_; ++p) {
            const size_t rs = r0 + p * mr;
            const size_t rows = rs < r1 ? std::min(mr, r1 - rs) : 0;
            float* dst = packed + ((gi * chunks_ + c) * chunk_panels_ + p) * mr * cig_;
            if (rows == 0) continue;  // zero-filled already
            kernels::f32_gemm_pack_a(mr, rows, cig_, src + gi * cig_ * col_stride + rs, 1, col_stride, dst);
          }
        }
      }
    };
    auto key = [&] {
      return pack_key("f32.deconv.gemm", *node_.input(1), {mr, group_, chunks_, chunk_panels_, cig_, cog_, khw_});
    };
    return pack_weights(packs, *node_.input(1), key, group_ * chunks_ * chunk_panels_ * mr * cig_, &packed_, fill);
  }

  // The non-overlapping path for input dims `x_dims`; false when memory runs out.
  bool use_upsample(const ir::Tensor& w, const ir::Tensor* bias, const std::vector<int64_t>& x_dims, PackStore* packs) {
    auto g = ops::resolve_conv_transpose(node_.attrs, x_dims, w_dims_);
    if (!g.ok() || !UpsampleDeconv::applies(*g)) return true;
    up_ = std::make_unique<UpsampleDeconv>();
    if (!up_->init(*g, w, bias, epilogue_.act, epilogue_.residual, packs, node_.input(1))) return false;
    up_dims_ = x_dims;
    up_height_ = static_cast<size_t>(g->out[0]);
    up_stride_ = static_cast<size_t>(g->strides[0]);
    return true;
  }

  bool upsamples() const { return up_ != nullptr; }

  size_t scratch_floats(const OpTensors&, size_t) const override {
    if (up_) return up_->scratch_floats(up_height_);  // the only path such a plan runs
    return (kc_ + chunk_rows_) * strip_panels_ * cfg_->nr;
  }

  Status run(const OpTensors& t, RunContext& rc) override {
    if (up_ && t.inputs[0]->dims() == up_dims_) return run_upsample(t, rc);
    if (!packed_.data())  // packed only where the upsampling path does not cover the plan
      return internal_error(node_.label() + ": input " + ir::dims_to_string(t.inputs[0]->dims()) +
                            " is not the planned " + ir::dims_to_string(up_dims_));
    NFUSE_ASSIGN_OR_RETURN(const TransposeGeometry* g, geometry(t.inputs[0]->dims()));
    // Row bands: with several threads and too few (image, group, chunk) tasks, split the output
    // rows too; band edges are multiples of the stride so that a kernel no taller than the
    // stride never computes an input row twice.
    const size_t outer = g->n * group_ * chunks_;
    const size_t threads = rc.pool.threads();
    size_t bands = 1;
    if (threads > 1 && outer < 4 * threads) {
      const size_t ek = static_cast<size_t>((static_cast<int64_t>(kh_) - 1) * g->dh + 1);
      const size_t min_rows = std::max<size_t>(static_cast<size_t>(g->sh), std::max<size_t>(4, ek));
      bands = std::min((4 * threads + outer - 1) / outer, std::max<size_t>(1, g->ho / min_rows));
    }
    const size_t sh = static_cast<size_t>(g->sh);
    const size_t band_rows = ((g->ho + bands - 1) / bands + sh - 1) / sh * sh;
    bands = (g->ho + band_rows - 1) / band_rows;
    const float* x = t.inputs[0]->data<float>();
    float* y = t.outputs[0]->data<float>();
    const float* r = epilogue_.residual ? t.implicit_inputs[0]->data<float>() : nullptr;
    auto task = [&](size_t index, size_t worker) {
      const size_t band = index % bands;
      const size_t c = (index / bands) % chunks_;
      const size_t gi = (index / bands / chunks_) % group_;
      const size_t n = index / bands / chunks_ / group_;
      const size_t oy0 = band * band_rows, oy1 = std::min(g->ho, oy0 + band_rows);
      run_task(*g, x + (n * g->ci + gi * cig_) * g->h * g->w, y + (n * co_ + gi * cog_) * g->ho * g->wo,
               r ? r + (n * co_ + gi * cog_) * g->ho * g->wo : nullptr, gi, c, oy0, oy1, rc.scratch.get(worker));
    };
    rc.pool.run(outer * bands, task);
    return ok_status();
  }

 private:
  // Images x bands of output rows; bands are whole multiples of the stride, so no input row is
  // computed by two tasks.
  Status run_upsample(const OpTensors& t, RunContext& rc) {
    const auto& xd = up_dims_;
    const size_t n = static_cast<size_t>(xd[0]), ci = static_cast<size_t>(xd[1]);
    const size_t h = static_cast<size_t>(xd[2]), w = static_cast<size_t>(xd[3]);
    const size_t ho = up_height_, wo = t.outputs[0]->dims()[3];
    const size_t threads = rc.pool.threads();
    const size_t steps = ho / up_stride_;
    const size_t bands = threads > 1 && n < 4 * threads ? std::clamp<size_t>((4 * threads + n - 1) / n, 1, steps) : 1;
    const size_t band_rows = (steps + bands - 1) / bands * up_stride_;
    const size_t tasks_per_image = (ho + band_rows - 1) / band_rows;
    const float* x = t.inputs[0]->data<float>();
    float* y = t.outputs[0]->data<float>();
    const float* r = epilogue_.residual ? t.implicit_inputs[0]->data<float>() : nullptr;
    auto task = [&](size_t index, size_t worker) {
      const size_t img = index / tasks_per_image, b = index % tasks_per_image;
      const size_t y0 = b * band_rows, y1 = std::min(ho, y0 + band_rows);
      const ConstPlaneRows xv{x + img * ci * h * w, h * w, w, 0};
      const PlaneRows yv{y + img * co_ * ho * wo, ho * wo, wo, 0};
      const ConstPlaneRows rv{r ? r + img * co_ * ho * wo : nullptr, ho * wo, wo, 0};
      up_->run(xv, yv, r ? &rv : nullptr, y0, y1, rc.scratch.get(worker));
    };
    rc.pool.run(n * tasks_per_image, task);
    return ok_status();
  }

  Result<const TransposeGeometry*> geometry(const std::vector<int64_t>& x_dims) {
    if (geo_valid_ && x_dims == geo_dims_) return &geo_;
    NFUSE_ASSIGN_OR_RETURN(ops::ConvGeometry g, ops::resolve_conv_transpose(node_.attrs, x_dims, w_dims_));
    if (g.rank() != 2) return unsupported("cpu ConvTranspose: only 2-D");
    auto u = [](int64_t v) { return static_cast<size_t>(v); };
    geo_ = TransposeGeometry{u(g.batch), u(g.in_channels), u(g.in[0]), u(g.in[1]), u(g.out_channels), u(g.out[0]),
                             u(g.out[1]), g.strides[0], g.strides[1], g.dilations[0], g.dilations[1],
                             g.pad_begin[0], g.pad_begin[1]};
    geo_dims_ = x_dims;
    geo_valid_ = true;
    return &geo_;
  }

  // One task: channels [chunk c] of group gi over output rows [oy0, oy1). x: the group's input
  // channels; y, r: the group's output (and residual) channels.
  void run_task(const TransposeGeometry& g, const float* x, float* y, const float* r, size_t gi, size_t c,
                size_t oy0, size_t oy1, float* ws) const {
    const size_t co0 = c * chunk_co_, co1 = std::min(cog_, co0 + chunk_co_);
    const size_t rows = (co1 - co0) * khw_;
    const size_t plane = g.ho * g.wo;
    const size_t band = (oy1 - oy0) * g.wo;
    for (size_t co = co0; co < co1; ++co) {
      float* yc = y + co * plane + oy0 * g.wo;
      std::fill(yc, yc + band, bias_.empty() ? 0.0f : bias_[gi * cog_ + co]);
    }
    // Input rows reaching output rows [oy0, oy1): oy = iy*sh + ky*dh - pad_top for some ky.
    const int64_t ext = (static_cast<int64_t>(kh_) - 1) * g.dh;
    const int64_t lo_num = static_cast<int64_t>(oy0) + g.pad_top - ext;
    const int64_t iy_lo = std::max<int64_t>(0, lo_num <= 0 ? 0 : (lo_num + g.sh - 1) / g.sh);
    const int64_t iy_hi = std::min<int64_t>(static_cast<int64_t>(g.h),
                                            (static_cast<int64_t>(oy1) - 1 + g.pad_top) / g.sh + 1);
    if (iy_lo < iy_hi) {
      const size_t mr = cfg_->mr, nr = cfg_->nr;
      const size_t strip = strip_panels_ * nr;
      float* bpack = ws;
      float* col = ws + kc_ * strip;
      const float* a_chunk = packed_.data() + (gi * chunks_ + c) * chunk_panels_ * mr * cig_;
      const size_t hw = g.h * g.w;
      const size_t p_end = static_cast<size_t>(iy_hi) * g.w;
      const kernels::F32GemmEpilogue ep;
      for (size_t p0 = static_cast<size_t>(iy_lo) * g.w; p0 < p_end; p0 += strip) {
        const size_t np = std::min(strip, p_end - p0);
        const size_t npanels = (np + nr - 1) / nr;
        for (size_t k0 = 0; k0 < cig_; k0 += kc_) {
          const size_t kc = std::min(kc_, cig_ - k0);
          for (size_t pn = 0; pn < npanels; ++pn) {
            const size_t nc = std::min(nr, np - pn * nr);
            float* d = bpack + pn * kc * nr;
            const float* s = x + k0 * hw + p0 + pn * nr;
            for (size_t kk = 0; kk < kc; ++kk, d += nr, s += hw) {
              std::memcpy(d, s, nc * sizeof(float));
              if (nc < nr) std::fill(d + nc, d + nr, 0.0f);
            }
          }
          uint32_t flags = k0 > 0 ? kernels::kF32GemmLoadC : 0;
          if (k0 + kc >= cig_) flags |= kernels::kF32GemmFinal;
          for (size_t mp = 0; mp < rows; mp += mr) {
            const float* a = a_chunk + (mp / mr) * mr * cig_ + k0 * mr;
            const size_t mrows = std::min(mr, rows - mp);
            for (size_t pn = 0; pn < npanels; ++pn) {
              cfg_->ukernel(mrows, std::min(nr, np - pn * nr), kc, a, bpack + pn * kc * nr, nr, col + mp * strip + pn * nr,
                            strip, flags, ep);
            }
          }
        }
        scatter(g, col, strip, co0, co1, p0, np, oy0, oy1, y);
      }
    }
    const float* rr = r;
    for (size_t co = co0; co < co1; ++co) {
      const size_t off = co * plane + oy0 * g.wo;
      add_residual_and_activate(y + off, rr ? rr + off : nullptr, band, epilogue_.act);
    }
  }

  // Adds col (rows (co - co0)*kh*kw + ky*kw + kx, pixels p0..p0+np of the input plane) into the
  // output rows [oy0, oy1) of y.
  void scatter(const TransposeGeometry& g, const float* col, size_t strip, size_t co0, size_t co1, size_t p0,
               size_t np, size_t oy0, size_t oy1, float* y) const {
    const size_t plane = g.ho * g.wo;
    const int64_t wo = static_cast<int64_t>(g.wo), sw = g.sw;
    for (size_t j = 0; j < np;) {
      const size_t p = p0 + j;
      const size_t iy = p / g.w, ix0 = p % g.w;
      const size_t len = std::min(np - j, g.w - ix0);
      for (size_t ky = 0; ky < kh_; ++ky) {
        const int64_t oy = static_cast<int64_t>(iy) * g.sh + static_cast<int64_t>(ky) * g.dh - g.pad_top;
        if (oy < static_cast<int64_t>(oy0) || oy >= static_cast<int64_t>(oy1)) continue;
        for (size_t kx = 0; kx < kw_; ++kx) {
          // ox = ix*sw + off for ix in [ix0, ix0 + len); keep 0 <= ox < wo.
          const int64_t off = static_cast<int64_t>(kx) * g.dw - g.pad_left;
          int64_t lo = static_cast<int64_t>(ix0), hi = static_cast<int64_t>(ix0 + len);
          if (off < 0) lo = std::max(lo, (-off + sw - 1) / sw);
          hi = std::min(hi, wo - 1 - off < 0 ? 0 : (wo - 1 - off) / sw + 1);
          if (lo >= hi) continue;
          const size_t tap = ky * kw_ + kx;
          for (size_t co = co0; co < co1; ++co) {
            // src[t] is input pixel ix0 + t of this row; dst[ix*sw + off] its output column.
            const float* src = col + ((co - co0) * khw_ + tap) * strip + j;
            float* dst = y + co * plane + static_cast<size_t>(oy) * g.wo;
            const int64_t base = static_cast<int64_t>(ix0);
            if (sw == 1) {
              for (int64_t ix = lo; ix < hi; ++ix) dst[ix + off] += src[ix - base];
            } else if (sw == 2) {
              for (int64_t ix = lo; ix < hi; ++ix) dst[2 * ix + off] += src[ix - base];
            } else {
              for (int64_t ix = lo; ix < hi; ++ix) dst[ix * sw + off] += src[ix - base];
            }
          }
        }
      }
      j += len;
    }
  }

  const ir::Node& node_;
  std::vector<int64_t> w_dims_;
  Epilogue epilogue_;
  const F32GemmConfig* cfg_ = nullptr;
  size_t group_ = 1, cig_ = 0, cog_ = 0, co_ = 0, kh_ = 1, kw_ = 1, khw_ = 1;
  size_t chunk_co_ = 1, chunks_ = 1, chunk_rows_ = 0, chunk_panels_ = 0, kc_ = 1, strip_panels_ = 1;
  std::vector<float> bias_;
  PackedFloats packed_;
  bool geo_valid_ = false;
  std::vector<int64_t> geo_dims_;
  TransposeGeometry geo_;
  std::unique_ptr<UpsampleDeconv> up_;
  std::vector<int64_t> up_dims_;
  size_t up_height_ = 0, up_stride_ = 1;
};

}  // namespace

Result<std::unique_ptr<CpuOp>> make_conv_transpose(const ir::Node& node, const CompileContext& ctx) {
  const ir::Tensor* w = constant_f32(node.input(1));
  if (!is_f32(node.input(0)) || !w || w->rank() != 4 || w->numel() == 0) return std::unique_ptr<CpuOp>();
  const ir::Shape& xs = node.input(0)->type.shape;
  if (xs.rank_known() && xs.rank() != 4) return std::unique_ptr<CpuOp>();
  const int64_t group = node.attrs.get_int("group", 1);
  if (group < 1 || w->dim(0) % group != 0) return std::unique_ptr<CpuOp>();
  const ir::Tensor* bias = nullptr;
  if (node.has_input(2)) {
    bias = constant_f32(node.input(2));
    if (!bias || bias->numel() != w->dim(1) * group) return std::unique_ptr<CpuOp>();
  }
  NFUSE_ASSIGN_OR_RETURN(Epilogue e, read_epilogue(node));
  if (e.fused_bias) return std::unique_ptr<CpuOp>();
  auto op = std::make_unique<ConvTranspose2d>(node, *w, bias, std::move(e),
                                              static_cast<size_t>(std::max(ctx.threads, 1)));
  const ir::Shape& planned = ctx.type_of(node.input(0)).shape;
  if (auto dims = planned.static_dims();
      dims && dims->size() == 4 && !op->use_upsample(*w, bias, *dims, ctx.packs.get()))
    return out_of_memory(node.label() + ": packed weights");
  // A plan's op sees only the input dims it was planned for: where the upsampling path covers
  // them, the general path's panels would never be read.
  if (!op->upsamples() && !op->pack(*w, ctx.packs.get())) return out_of_memory(node.label() + ": packed weights");
  return std::unique_ptr<CpuOp>(std::move(op));
}

}  // namespace nfuse::backends::cpu
