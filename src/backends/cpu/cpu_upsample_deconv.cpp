#include "backends/cpu/cpu_upsample_deconv.h"

#include <algorithm>

#include "backends/cpu/cpu_conv_util.h"
#include "backends/cpu/cpu_row_deconv.h"
#include "backends/pack_store.h"

namespace nfuse::backends::cpu {
namespace {

constexpr size_t kColFloats = 96 * 1024 / sizeof(float);  // one chunk's GEMM output: L2-resident

// Packs rows [0, m) of a (row-major, k columns) into MR-high panels at dst (panels * mr * k floats).
void pack_panels(const kernels::F32GemmConfig& cfg, const float* a, size_t m, size_t k, float* dst) {
  const size_t mr = cfg.mr;
  for (size_t p = 0; p * mr < m; ++p)
    kernels::f32_gemm_pack_a(mr, std::min(mr, m - p * mr), k, a + p * mr * k, k, 1, dst + p * mr * k);
}

}  // namespace

bool UpsampleDeconv::applies(const ops::ConvGeometry& g) {
  if (g.rank() != 2 || g.group != 1) return false;
  for (int i = 0; i < 2; ++i)
    if (g.kernel[i] != g.strides[i] || g.dilations[i] != 1 || g.pad_begin[i] != 0 || g.out[i] != g.in[i] * g.strides[i])
      return false;
  return true;
}

bool UpsampleDeconv::init(const ops::ConvGeometry& g, const ir::Tensor& w, const ir::Tensor* bias,
                          const Activation& act, bool residual, PackStore* packs, const ir::Value* weight) {
  auto u = [](int64_t v) { return static_cast<size_t>(v); };
  ci_ = u(g.in_channels);
  co_ = u(g.out_channels);
  h_ = u(g.in[0]);
  w_ = u(g.in[1]);
  wo_ = u(g.out[1]);
  s_ = u(g.strides[0]);
  kw_ = u(g.kernel[1]);
  m_ = co_ * kw_;
  act_ = act;
  residual_ = residual;
  const size_t m_all = s_ * m_;
  // One configuration for both GEMMs: the per-tap one is a row range of the other.
  cfg_ = &kernels::f32_gemm_config_for_rows(m_all);
  const size_t kblocks = std::max<size_t>(1, (ci_ + cfg_->kc - 1) / cfg_->kc);
  kc_ = (ci_ + kblocks - 1) / kblocks;
  panels_ = (m_ + cfg_->mr - 1) / cfg_->mr;
  all_panels_ = (m_all + cfg_->mr - 1) / cfg_->mr;
  chunk_rows_ = std::max<size_t>(1, kColFloats / (m_ * w_));
  all_chunk_rows_ = std::max<size_t>(1, kColFloats / (m_all * w_));
  all_bias_.assign(m_all, 0.0f);
  if (bias)
    for (size_t r = 0; r < m_all; ++r) all_bias_[r] = bias->data<float>()[(r % m_) / kw_];
  const size_t floats = (all_panels_ + s_ * panels_) * cfg_->mr * ci_;
  auto fill = [&](float* dst) {
    // A[(ky, co, kx)][ci] = W[ci][co][ky][kx].
    std::vector<float> a(m_all * ci_);
    const float* src = w.data<float>();
    for (size_t ky = 0; ky < s_; ++ky)
      for (size_t ci = 0; ci < ci_; ++ci)
        for (size_t co = 0; co < co_; ++co)
          for (size_t kx = 0; kx < kw_; ++kx)
            a[(ky * m_ + co * kw_ + kx) * ci_ + ci] = src[((ci * co_ + co) * s_ + ky) * kw_ + kx];
    pack_panels(*cfg_, a.data(), m_all, ci_, dst);
    for (size_t ky = 0; ky < s_; ++ky)
      pack_panels(*cfg_, a.data() + ky * m_ * ci_, m_, ci_, dst + (all_panels_ + ky * panels_) * cfg_->mr * ci_);
  };
  if (packs && weight) {
    auto key = [&] { return pack_key("f32.deconv.upsample", *weight, {cfg_->mr, ci_, co_, s_, kw_}); };
    return pack_weights(packs, *weight, key, floats, &packed_, fill);
  }
  if (!packed_.resize(floats)) return false;
  fill(packed_.data());
  return true;
}

size_t UpsampleDeconv::scratch_floats(size_t out_rows) const {
  const size_t in_rows = (out_rows + s_ - 1) / s_ + 1;
  const size_t col = std::max(m_ * std::min(chunk_rows_, in_rows), s_ * m_ * std::min(all_chunk_rows_, in_rows));
  return col * w_ + kc_ * cfg_->nr;
}

void UpsampleDeconv::input_rows(size_t y0, size_t y1, size_t* lo, size_t* hi) const {
  *lo = y1 <= y0 ? 0 : std::min(h_, y0 / s_);
  *hi = y1 <= y0 ? 0 : std::min(h_, (y1 - 1) / s_ + 1);
}

void UpsampleDeconv::run(const ConstPlaneRows& x, const PlaneRows& y, const ConstPlaneRows* r, size_t y0, size_t y1,
                         float* ws) const {
  if (y1 <= y0) return;
  // Input rows all of whose output rows are wanted: one GEMM over every tap row.
  const size_t full_lo = std::min(h_, (y0 + s_ - 1) / s_), full_hi = std::max(full_lo, std::min(h_, y1 / s_));
  for (size_t iy = full_lo; iy < full_hi; iy += all_chunk_rows_) {
    const size_t rows = std::min(all_chunk_rows_, full_hi - iy), np = rows * w_;
    gemm(x, all_panels(), all_bias_.data(), s_ * m_, iy, rows, ws);
    for (size_t ky = 0; ky < s_; ++ky) scatter(y, r, ky, iy, rows, ws + ky * m_ * np, np);
  }
  // The input rows at either end whose output rows are only partly wanted: those tap rows alone.
  const size_t ends[2] = {y0 / s_, (y1 - 1) / s_};
  for (size_t e = 0; e < 2; ++e) {
    const size_t iy = ends[e];
    if (iy >= h_ || (iy >= full_lo && iy < full_hi) || (e == 1 && iy == ends[0])) continue;
    for (size_t ky = 0; ky < s_; ++ky) {
      const size_t oy = iy * s_ + ky;
      if (oy < y0 || oy >= y1) continue;
      gemm(x, tap_panels(ky), all_bias_.data(), m_, iy, 1, ws);
      scatter(y, r, ky, iy, 1, ws, w_);
    }
  }
}

void UpsampleDeconv::gemm(const ConstPlaneRows& x, const float* a_panels, const float* bias, size_t m, size_t iy,
                          size_t rows, float* ws) const {
  kernels::F32GemmEpilogue ep;
  if (!residual_) {  // with a residual the clamp comes after it, in scatter
    ep.min = act_.min;
    ep.max = act_.max;
  }
  deconv_gemm(*cfg_, x, ci_, kc_, w_, a_panels, m, iy, rows, ep, bias, ws);
}

// Output rows iy * s + ky from col (rows (co, kx) of np pixels), then the residual and the
// activation the clamp left.
void UpsampleDeconv::scatter(const PlaneRows& y, const ConstPlaneRows* r, size_t ky, size_t iy, size_t rows,
                             const float* col, size_t np) const {
  for (size_t c = 0; c < co_; ++c) {
    for (size_t i = 0; i < rows; ++i) {
      const size_t oy = (iy + i) * s_ + ky;
      float* dst = y.row(c, oy);
      const float* src = col + c * kw_ * np + i * w_;
      if (kw_ == 2) {  // the common 2x2: two tap columns interleaved
        const float* src1 = src + np;
        for (size_t ix = 0; ix < w_; ++ix) {
          dst[2 * ix] = src[ix];
          dst[2 * ix + 1] = src1[ix];
        }
      } else {
        for (size_t kx = 0; kx < kw_; ++kx, src += np)
          for (size_t ix = 0; ix < w_; ++ix) dst[ix * kw_ + kx] = src[ix];
      }
      if (r) {
        add_residual_and_activate(dst, r->row(c, oy), wo_, act_);
      } else if (act_.needs_pass()) {
        act_.apply(dst, wo_);
      }
    }
  }
}

}  // namespace nfuse::backends::cpu
