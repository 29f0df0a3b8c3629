// The W * X quantized convolution driver (cpu_qconv_wx.h).
#include "backends/cpu/cpu_qconv_wx.h"

#include <algorithm>
#include <cstring>

#include "backends/cpu/cpu_q8_im2col.h"
#include "backends/cpu/cpu_qconv_padded.h"
#include "core/check.h"

namespace nfuse::backends::cpu {

const kernels::Qu8WxConfig* QConvWx::config() {
  const kernels::Qu8WxConfig* cfg = kernels::qu8_wxgemm_config(kernels::selected_isa());
  // pack_panel's run table holds one run per output-row segment of a panel; task's panel table
  // one entry per 32 pixels of a block.
  return cfg != nullptr && cfg->nr <= QConvPaddedRows::kMaxRuns && cfg->nr >= 32 ? cfg : nullptr;
}

QConvWx::QConvWx(const kernels::Qu8WxConfig& cfg, size_t co, size_t k, size_t group)
    : cfg_(cfg), co_(co), k_(k), group_(group) {
  const size_t kpad = (k_ + 3) / 4 * 4;
  block_ = std::min<size_t>(kMaxBlock, std::max<size_t>(32, kBlockBytes / kpad / 32 * 32));
}

void pack_wx_panels(const kernels::Qu8WxConfig& cfg, size_t co, size_t k, size_t group, const int8_t* w,
                    const int32_t* bias, const float* multiplier, int32_t x_zp, bool x_signed, uint8_t* dst) {
  const size_t cg = co / group, panel_bytes = kernels::qu8_wxgemm_packed_w_size(cfg, cg, k);
  for (size_t g = 0; g < group; ++g)
    kernels::qu8_wxgemm_pack_w(cfg, cg, k, w + g * cg * k, bias ? bias + g * cg : nullptr,
                               multiplier ? multiplier + g * cg : nullptr, x_zp, x_signed, dst + g * panel_bytes);
}

bool QConvWx::pack(const int8_t* w, const int32_t* bias, const float* multiplier, int32_t x_zp, bool x_signed,
                   PackStore* packs, const ir::Value* weight, const std::function<std::string()>& key) {
  const size_t cg = co_ / group_;
  panel_bytes_ = kernels::qu8_wxgemm_packed_w_size(cfg_, cg, k_);
  const size_t floats = (panel_bytes_ * group_ + sizeof(float) - 1) / sizeof(float);
  auto fill = [&](float* dst) {
    std::vector<int8_t> tap_major;
    if (quads()) {
      tap_major.resize(co_ * k_);
      q8_weights_to_tap_major(w, co_, k_ / quad_taps_, quad_taps_, tap_major.data());
    }
    pack_wx_panels(cfg_, co_, k_, group_, quads() ? tap_major.data() : w, bias, multiplier, x_zp, x_signed,
                   reinterpret_cast<uint8_t*>(dst));
  };
  if (packs && weight && key) return pack_weights(packs, *weight, key, floats, &packed_, fill);
  if (!packed_.resize(floats)) return false;
  fill(packed_.data());
  return true;
}

bool QConvWx::pack_with(PackStore* packs, const ir::Value* weight, const std::function<std::string()>& key,
                        const std::function<void(int8_t*)>& produce) {
  const size_t cg = co_ / group_;
  panel_bytes_ = kernels::qu8_wxgemm_packed_w_size(cfg_, cg, k_);
  const size_t floats = (panel_bytes_ * group_ + sizeof(float) - 1) / sizeof(float);
  auto fill = [&](float* dst) {
    std::vector<int8_t> w(co_ * k_);
    produce(w.data());
    pack_wx_panels(cfg_, co_, k_, group_, w.data(), nullptr, nullptr, 0, false, reinterpret_cast<uint8_t*>(dst));
  };
  if (!packs || !weight) {
    if (!packed_.resize(floats)) return false;
    fill(packed_.data());
    return true;
  }
  PackedFloats stored;
  if (!pack_weights(packs, *weight, key, floats, &stored, fill) || !packed_.resize(floats)) return false;
  std::memcpy(packed_.data(), stored.data(), floats * sizeof(float));
  return true;
}

void QConvWx::set_row_params(const int32_t* bias_prime, const float* multiplier) {
  NFUSE_DCHECK(!packed_.borrowed(), "set_row_params on weights a context binary lends");
  const size_t cg = co_ / group_;
  for (size_t g = 0; g < group_; ++g) {
    kernels::qu8_wxgemm_set_row_params(cfg_, cg, k_, bias_prime + g * cg, multiplier + g * cg,
                                       reinterpret_cast<uint8_t*>(packed_.data()) + g * panel_bytes_);
  }
}

// Each worker's packed X block, then (worker 0's only, read by all) the padded planes. In the
// partition's scratch rather than op-owned, because one buffer shared by every convolution stays
// in cache from one to the next, where ResNet-50's 53 op-owned copies each came cold. Every
// worker's scratch is sized for both parts (the Scratch API sizes all alike).
// With a region, each worker's float tile (MR rows of a block) and the region's work follow.
size_t QConvWx::scratch_floats(const Conv2dGeometry& g, const ConvRegionEpilogue* region) const {
  size_t padded = 0;
  if (!is_pointwise_unpadded(g) && g.ho != 0 && g.wo != 0) padded = QConvPaddedRows(g, 0, false).buffer_bytes(g.ho);
  const size_t base = (packed_x_bytes() + padded + sizeof(float) - 1) / sizeof(float);
  return region ? base + cfg_.mr * block_ + region->work_floats() : base;
}

Status QConvWx::run(const Conv2dGeometry& g, const uint8_t* x_all, int32_t x_zp, bool x_signed, void* y_all,
                    const kernels::Qu8GemmRequant& rq, const FloatEpilogue& fe, RunContext& rc,
                    const std::string& label, const ConvRegionEpilogue* region) {
  const size_t p = g.ho * g.wo, hw = g.h * g.w;
  const size_t cin_g = g.c / g.group, cg = co_ / g.group;
  if (p == 0 || g.n == 0) return ok_status();  // empty output (padded rows need ho, wo >= 1)
  const bool direct = is_pointwise_unpadded(g);
  const QConvPaddedRows padded(g, x_zp, x_signed);
  uint8_t* buf = nullptr;
  const size_t tile_at = region ? scratch_floats(g) : 0;  // the float tile's offset in a worker's scratch
  if (rc.scratch.floats() < scratch_floats(g, region)) return internal_error(label + ": scratch too small");
  if (quads() && (direct || !QConvPaddedRows::quads_apply(g) || g.kh * g.kw != quad_taps_))
    return internal_error(label + ": weights packed for channel quads, geometry without them");
  if (!direct) {
    buf = reinterpret_cast<uint8_t*>(rc.scratch.get(0)) + packed_x_bytes();
    row_offset_.resize(quads() ? k_ / 4 : k_);
    if (quads()) {
      padded.quad_offsets(g.ho, row_offset_.data());
      const size_t quads = cin_g / 4;
      tap_offset_.resize(quad_taps_);
      for (size_t t = 0; t < quad_taps_; ++t) tap_offset_[t] = row_offset_[t * quads];
      quad_stride_ = padded.quad_stride(g.ho);
    } else {
      padded.row_offsets(g.ho, row_offset_.data());
    }
  }
  const size_t y_elem = rq.f32_out && !region ? sizeof(float) : 1;
  const kernels::GemmTasks tasks = kernels::gemm_tasks(cfg_.nr, cfg_.mr, p, cg, k_, rc.pool.threads());
  for (size_t n = 0; n < g.n; ++n) {
    for (size_t gi = 0; gi < g.group; ++gi) {
      const uint8_t* x = x_all + (n * g.c + gi * cin_g) * hw;
      uint8_t* y = static_cast<uint8_t*>(y_all) + (n * co_ + gi * cg) * p * y_elem;
      const uint8_t* w = reinterpret_cast<const uint8_t*>(packed_.data()) + gi * panel_bytes_;
      if (!direct) {
        const size_t units = quads() ? cin_g / 4 : cin_g;  // channels, or quads of them
        const size_t cstep = std::max<size_t>(1, (units + rc.pool.threads() * 4 - 1) / (rc.pool.threads() * 4));
        const PlaneRowsOf<const uint8_t> planes{x, hw, g.w, 0};
        rc.pool.run((units + cstep - 1) / cstep, [&](size_t i, size_t) {
          const size_t u0 = i * cstep, u1 = std::min(units, (i + 1) * cstep);
          if (quads()) {
            padded.fill_quads(planes, u0, u1, 0, g.ho, buf);
          } else {
            padded.fill(planes, g.h, u0, u1, 0, g.ho, buf);
          }
        });
      }
      FloatEpilogue group_fe;
      if (fe.row_bias) group_fe.row_bias = fe.row_bias + gi * cg;
      if (fe.row_factor) group_fe.row_factor = fe.row_factor + gi * cg;
      rc.pool.run(tasks.count(), [&](size_t i, size_t worker) {
        size_t p0, p1, c0, c1;
        tasks.range(i, p, cg, &p0, &p1, &c0, &c1);
        float* scratch = rc.scratch.get(worker);
        task(g, direct ? nullptr : &padded, buf, x, x_signed, x_zp, w, y, y_elem, p0, p1, c0, c1, rq, group_fe, scratch,
             region, gi * cg, scratch + tile_at);
      });
    }
  }
  return ok_status();
}

void QConvWx::task(const Conv2dGeometry& g, const QConvPaddedRows* padded, const uint8_t* buf, const uint8_t* x,
                   bool x_signed, int32_t x_zp, const uint8_t* w, uint8_t* y, size_t y_elem, size_t p0, size_t p1,
                   size_t c0, size_t c1, const kernels::Qu8GemmRequant& rq, const FloatEpilogue& fe, float* scratch,
                   const ConvRegionEpilogue* region, size_t first_channel, float* tile) const {
  const size_t p = g.ho * g.wo, hw = g.h * g.w;
  const size_t mr = cfg_.mr, nr = cfg_.nr, kpad = (k_ + 3) / 4 * 4;
  const size_t w_panel = kernels::qu8_wxgemm_packed_w_size(cfg_, mr, k_);
  uint8_t* packed_x = reinterpret_cast<uint8_t*>(scratch);
  kernels::Qu8GemmRequant tile_rq = rq;
  int32_t col_term[kMaxBlock];  // the cross term's per-pixel part, colsum(X) - K * x_zp (wrapping)
  const uint32_t k_zp = static_cast<uint32_t>(k_) * static_cast<uint32_t>(x_zp);
  // Channel quads on a kernel that reads them in place: a panel whose pixels lie on one output
  // row is read from the quad rows (in_place[panel] holds its offset there), the others packed.
  const bool quads_in_place = padded && quads() && cfg_.quad_ukernel != nullptr && !fe.row_factor;
  kernels::Qu8WxQuads xq;
  if (quads_in_place) xq = {tap_offset_.data(), quad_taps_, (k_ / 4) / quad_taps_, quad_stride_};
  constexpr size_t kPacked = ~size_t{0};
  size_t in_place[kMaxBlock / 32];  // block_ / nr panels (nr >= 32: config())
  for (size_t pb = p0; pb < p1; pb += block_) {
    const size_t len = std::min(block_, p1 - pb);
    for (size_t j = 0; j < len; j += nr) {
      const size_t n = std::min(nr, len - j);
      in_place[j / nr] = kPacked;
      if (quads_in_place && (pb + j) % g.wo + n <= g.wo) {
        in_place[j / nr] = padded->quad_pixel_offset(pb + j);
        continue;
      }
      if (padded && quads()) {
        padded->pack_panel_quads(cfg_, row_offset_.data(), pb + j, n, buf, packed_x + j * kpad);
      } else if (padded) {
        padded->pack_panel(cfg_, row_offset_.data(), pb + j, std::min(nr, len - j), buf, packed_x + j * kpad);
      } else {
        kernels::qu8_wxgemm_pack_x(cfg_, k_, std::min(nr, len - j), x + pb + j, hw, x_signed, packed_x + j * kpad);
      }
      if (fe.row_factor) {
        int32_t sums[QConvPaddedRows::kMaxRuns];  // NR <= kMaxRuns (config())
        kernels::qu8_wxgemm_panel_column_sums(cfg_, kpad, packed_x + j * kpad, sums);
        for (size_t jj = 0; jj < std::min(nr, len - j); ++jj)
          col_term[j + jj] = static_cast<int32_t>(static_cast<uint32_t>(sums[jj]) - k_zp);
      }
    }
    for (size_t c = c0; c < c1; c += mr) {
      const uint8_t* wp = w + c / mr * w_panel;
      if (fe.row_bias) tile_rq.row_bias = fe.row_bias + c;
      if (fe.row_factor) tile_rq.row_factor = fe.row_factor + c;
      const size_t rows = std::min(mr, c1 - c);
      for (size_t j = 0; j < len; j += nr) {
        if (fe.row_factor) tile_rq.col_term = col_term + j;
        uint8_t* out = region ? reinterpret_cast<uint8_t*>(tile + j) : y + (c * p + pb + j) * y_elem;
        const size_t out_stride = region ? block_ : p;
        if (in_place[j / nr] != kPacked) {
          cfg_.quad_ukernel(rows, std::min(nr, len - j), xq, wp, buf + in_place[j / nr], out, out_stride, tile_rq);
        } else {
          cfg_.ukernel(rows, std::min(nr, len - j), kpad, wp, packed_x + j * kpad, out, out_stride, tile_rq);
        }
      }
      for (size_t r = 0; region && r < rows; ++r) {
        region->finish(tile + r * block_, len, first_channel + c + r, y + (c + r) * p + pb, tile + mr * block_);
      }
    }
  }
}

}  // namespace nfuse::backends::cpu
