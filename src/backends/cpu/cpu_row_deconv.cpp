#include "backends/cpu/cpu_row_deconv.h"

#include <algorithm>
#include <cstring>

#include "backends/pack_store.h"

namespace nfuse::backends::cpu {
namespace {

constexpr size_t kColFloats = 96 * 1024 / sizeof(float);  // one chunk's GEMM output: L2-resident

}  // namespace

void deconv_gemm(const kernels::F32GemmConfig& cfg, const ConstPlaneRows& x, size_t k, size_t kc_max, size_t width,
                 const float* a_panels, size_t m, size_t iy, size_t rows, kernels::F32GemmEpilogue ep,
                 const float* row_bias, float* ws) {
  const size_t np = rows * width, nr = cfg.nr, mr = cfg.mr;
  const size_t full = np / nr, npanels = (np + nr - 1) / nr;
  float* col = ws;
  float* tail = ws + m * np;
  for (size_t k0 = 0; k0 < k; k0 += kc_max) {
    const size_t kc = std::min(kc_max, k - k0);
    if (full < npanels) {
      const size_t q = full * nr, nc = np - q;
      for (size_t kk = 0; kk < kc; ++kk) {
        std::memcpy(tail + kk * nr, x.row(k0 + kk, iy) + q, nc * sizeof(float));
        std::fill(tail + kk * nr + nc, tail + (kk + 1) * nr, 0.0f);
      }
    }
    const uint32_t flags = (k0 > 0 ? kernels::kF32GemmLoadC : 0u) | (k0 + kc >= k ? kernels::kF32GemmFinal : 0u);
    for (size_t mp = 0; mp < m; mp += mr) {
      const float* a = a_panels + (mp / mr) * mr * k + k0 * mr;
      ep.row_bias = row_bias ? row_bias + mp : nullptr;
      for (size_t pn = 0; pn < npanels; ++pn) {
        const bool direct = pn < full;
        const float* b = direct ? x.row(k0, iy) + pn * nr : tail;
        cfg.ukernel(std::min(mr, m - mp), std::min(nr, np - pn * nr), kc, a, b, direct ? x.plane : nr,
                    col + mp * np + pn * nr, np, flags, ep);
      }
    }
  }
}

bool RowDeconv::init(const ops::ConvGeometry& g, const ir::Tensor& w, const ir::Tensor* bias, const Activation& act,
                     bool residual, PackStore* packs, const ir::Value* weight) {
  auto u = [](int64_t v) { return static_cast<size_t>(v); };
  group_ = u(g.group);
  cig_ = u(g.in_channels) / group_;
  cog_ = u(g.out_channels) / group_;
  h_ = u(g.in[0]), w_ = u(g.in[1]), ho_ = u(g.out[0]), wo_ = u(g.out[1]);
  kh_ = u(g.kernel[0]), kw_ = u(g.kernel[1]), sh_ = u(g.strides[0]), sw_ = u(g.strides[1]);
  dh_ = u(g.dilations[0]), dw_ = u(g.dilations[1]);
  pad_top_ = u(g.pad_begin[0]);
  pad_left_ = g.pad_begin[1];
  act_ = act;
  residual_ = residual;
  m_ = cog_ * kw_;
  cfg_ = &kernels::f32_gemm_config_for_rows(m_);
  const size_t kblocks = std::max<size_t>(1, (cig_ + cfg_->kc - 1) / cfg_->kc);
  kc_ = (cig_ + kblocks - 1) / kblocks;
  panels_ = (m_ + cfg_->mr - 1) / cfg_->mr;
  chunk_rows_ = std::max<size_t>(1, kColFloats / std::max<size_t>(1, m_ * w_));
  bias_.assign(cog_ * group_, 0.0f);
  if (bias) std::copy_n(bias->data<float>(), bias_.size(), bias_.begin());
  const size_t per = panels_ * cfg_->mr * cig_;  // floats per (group, tap row)
  auto fill = [&](float* packed) {
    // A[(co, kx)][ci] = W[g * cig + ci][co][ky][kx], one matrix per (group, tap row).
    std::vector<float> a(m_ * cig_);
    const float* src = w.data<float>();
    for (size_t gi = 0; gi < group_; ++gi) {
      for (size_t ky = 0; ky < kh_; ++ky) {
        for (size_t ci = 0; ci < cig_; ++ci)
          for (size_t co = 0; co < cog_; ++co)
            for (size_t kx = 0; kx < kw_; ++kx)
              a[(co * kw_ + kx) * cig_ + ci] = src[(((gi * cig_ + ci) * cog_ + co) * kh_ + ky) * kw_ + kx];
        float* dst = packed + (gi * kh_ + ky) * per;
        for (size_t p = 0; p * cfg_->mr < m_; ++p)
          kernels::f32_gemm_pack_a(cfg_->mr, std::min(cfg_->mr, m_ - p * cfg_->mr), cig_,
                                   a.data() + p * cfg_->mr * cig_, cig_, 1, dst + p * cfg_->mr * cig_);
      }
    }
  };
  if (packs && weight) {
    auto key = [&] { return pack_key("f32.deconv.rows", *weight, {cfg_->mr, group_, cig_, cog_, kh_, kw_}); };
    return pack_weights(packs, *weight, key, group_ * kh_ * per, &packed_, fill);
  }
  if (!packed_.resize(group_ * kh_ * per)) return false;
  fill(packed_.data());
  return true;
}

size_t RowDeconv::scratch_floats(size_t out_rows) const {
  const size_t in_rows = std::min(chunk_rows_, (out_rows + sh_ - 1) / sh_ + 1);
  return m_ * in_rows * w_ + kc_ * cfg_->nr;
}

void RowDeconv::tap_rows(size_t ky, size_t y0, size_t y1, size_t* lo, size_t* hi) const {
  // oy = iy * sh + ky * dh - pad_top in [y0, y1)  <=>  iy * sh in [y0 + pad_top - ky * dh, y1 + ...).
  const int64_t shift = static_cast<int64_t>(pad_top_) - static_cast<int64_t>(ky * dh_);
  const int64_t a = static_cast<int64_t>(y0) + shift, b = static_cast<int64_t>(y1) + shift;  // [a, b)
  const int64_t s = static_cast<int64_t>(sh_), h = static_cast<int64_t>(h_);
  const int64_t first = a <= 0 ? 0 : (a + s - 1) / s;
  const int64_t last = b <= 0 ? 0 : (b - 1) / s + 1;  // exclusive
  *lo = static_cast<size_t>(std::min(first, h));
  *hi = static_cast<size_t>(std::clamp(last, static_cast<int64_t>(*lo), h));
}

void RowDeconv::input_rows(size_t y0, size_t y1, size_t* lo, size_t* hi) const {
  *lo = h_, *hi = 0;
  for (size_t ky = 0; ky < kh_ && y1 > y0; ++ky) {
    size_t a, b;
    tap_rows(ky, y0, y1, &a, &b);
    if (a >= b) continue;
    *lo = std::min(*lo, a);
    *hi = std::max(*hi, b);
  }
  if (*lo >= *hi) *lo = *hi = 0;
}

void RowDeconv::run(const ConstPlaneRows& x, const PlaneRows& y, const ConstPlaneRows* r, size_t y0, size_t y1,
                    float* ws) const {
  if (y1 <= y0) return;
  for (size_t c = 0; c < cog_ * group_; ++c)
    for (size_t oy = y0; oy < y1; ++oy) std::fill(y.row(c, oy), y.row(c, oy) + wo_, bias_[c]);
  const size_t per = panels_ * cfg_->mr * cig_;
  const int64_t wo = static_cast<int64_t>(wo_), sw = static_cast<int64_t>(sw_);
  const kernels::F32GemmEpilogue ep;  // bias and activation belong to the summed output
  for (size_t ky = 0; ky < kh_; ++ky) {
    size_t lo, hi;
    tap_rows(ky, y0, y1, &lo, &hi);
    for (size_t gi = 0; gi < group_; ++gi) {
      const ConstPlaneRows xg{x.data + gi * cig_ * x.plane, x.plane, x.width, x.base};
      for (size_t iy = lo; iy < hi; iy += chunk_rows_) {
        const size_t rows = std::min(chunk_rows_, hi - iy), np = rows * w_;
        deconv_gemm(*cfg_, xg, cig_, kc_, w_, packed_.data() + (gi * kh_ + ky) * per, m_, iy, rows, ep, nullptr, ws);
        for (size_t i = 0; i < rows; ++i) {
          const size_t oy = (iy + i) * sh_ + ky * dh_ - pad_top_;
          for (size_t kx = 0; kx < kw_; ++kx) {
            // ox = ix * sw + off for ix in [0, w); keep 0 <= ox < wo.
            const int64_t off = static_cast<int64_t>(kx * dw_) - pad_left_;
            const int64_t ix0 = off < 0 ? (-off + sw - 1) / sw : 0;
            const int64_t ix1 = std::min<int64_t>(static_cast<int64_t>(w_), wo - 1 - off < 0 ? 0 : (wo - 1 - off) / sw + 1);
            if (ix0 >= ix1) continue;
            for (size_t co = 0; co < cog_; ++co) {
              const float* src = ws + (co * kw_ + kx) * np + i * w_;
              float* dst = y.row(gi * cog_ + co, oy);
              if (sw == 1) {
                for (int64_t ix = ix0; ix < ix1; ++ix) dst[ix + off] += src[ix];
              } else {
                for (int64_t ix = ix0; ix < ix1; ++ix) dst[ix * sw + off] += src[ix];
              }
            }
          }
        }
      }
    }
  }
  for (size_t c = 0; c < cog_ * group_; ++c)
    for (size_t oy = y0; oy < y1; ++oy) add_residual_and_activate(y.row(c, oy), r ? r->row(c, oy) : nullptr, wo_, act_);
}

}  // namespace nfuse::backends::cpu
