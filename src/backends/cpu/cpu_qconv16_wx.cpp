// The W * X W8A16 convolution driver (cpu_qconv16_wx.h).
//
// Padded planes (one group's channels, per channel `plane` elements): padded row r (input row
// r - pad_top) is sw phase rows of `cols` elements; phase ph, column j holds input column
// j * sw + ph - pad_left, or x's zero point outside the image. Output pixel (oy, ox) reads tap
// (c, ky, kx) at c * plane + (oy * sh + ky * dh) * sw * cols + (kx * dw % sw) * cols +
// kx * dw / sw + ox: consecutive ox are consecutive elements, so one output row's segment of a
// panel is one run for every K row.
#include "backends/cpu/cpu_qconv16_wx.h"

#include <algorithm>
#include <cstring>

#include "backends/cpu/cpu_q8_im2col.h"
#include "backends/pack_store.h"

namespace nfuse::backends::cpu {
namespace {

// The padded planes' shape for geometry g (all of one image's output rows).
struct PaddedShape {
  size_t cols = 0, rows = 0, row_elems = 0, plane = 0;
  explicit PaddedShape(const Conv2dGeometry& g) {
    cols = g.wo + (g.kw - 1) * g.dw / g.sw;
    rows = (g.ho - 1) * g.sh + (g.kh - 1) * g.dh + 1;
    row_elems = g.sw * cols;
    plane = rows * row_elems;
  }
};

// Channels [c0, c1) of x (NCHW planes of h x w) into the padded planes at buf.
void fill_padded(const Conv2dGeometry& g, const PaddedShape& s, const uint16_t* x, uint16_t pad, size_t c0, size_t c1,
                 uint16_t* buf) {
  const ptrdiff_t h = static_cast<ptrdiff_t>(g.h), w = static_cast<ptrdiff_t>(g.w);
  const ptrdiff_t sw = static_cast<ptrdiff_t>(g.sw), n = static_cast<ptrdiff_t>(s.cols);
  for (size_t c = c0; c < c1; ++c) {
    const uint16_t* src = x + c * g.h * g.w;
    uint16_t* dst = buf + c * s.plane;
    for (size_t r = 0; r < s.rows; ++r) {
      const ptrdiff_t iy = static_cast<ptrdiff_t>(r) - static_cast<ptrdiff_t>(g.pad_top);
      for (ptrdiff_t ph = 0; ph < sw; ++ph, dst += s.cols) {
        if (iy < 0 || iy >= h) {
          std::fill(dst, dst + n, pad);
          continue;
        }
        // Columns [j0, j1) read input ix = j * sw + ix0 inside the row.
        const ptrdiff_t ix0 = ph - static_cast<ptrdiff_t>(g.pad_left);
        const ptrdiff_t j0 = std::min(n, ix0 >= 0 ? 0 : (-ix0 + sw - 1) / sw);
        const ptrdiff_t j1 = std::max(j0, std::min(n, ix0 < w ? (w - 1 - ix0) / sw + 1 : 0));
        const uint16_t* row = src + iy * w;
        std::fill(dst, dst + j0, pad);
        if (sw == 1) {
          std::memcpy(dst + j0, row + ix0 + j0, static_cast<size_t>(j1 - j0) * sizeof(uint16_t));
        } else {
          for (ptrdiff_t j = j0; j < j1; ++j) dst[j] = row[ix0 + j * sw];
        }
        std::fill(dst + j1, dst + n, pad);
      }
    }
  }
}

}  // namespace

const kernels::Qs16WxConfig* QConv16Wx::config() { return kernels::qs16_wxgemm_config(kernels::selected_isa()); }

QConv16Wx::QConv16Wx(const kernels::Qs16WxConfig& cfg, size_t co, size_t k, size_t group)
    : cfg_(cfg), co_(co), k_(k), group_(group) {
  block_ = std::min<size_t>(kMaxBlock, std::max<size_t>(32, kBlockBytes / (kpad() * sizeof(int16_t)) / 32 * 32));
}

bool QConv16Wx::pack(const ir::Tensor& w, const int32_t* bias, const float* multiplier, int32_t x_zp, bool x_unsigned,
                     PackStore* packs, const ir::Value* weight, uint64_t baked) {
  x_zp_ = x_zp, x_unsigned_ = x_unsigned;
  const size_t cg = co_ / group_;
  panel_bytes_ = kernels::qs16_wxgemm_packed_w_size(cfg_, cg, k_);
  const size_t floats = (panel_bytes_ * group_ + sizeof(float) - 1) / sizeof(float);
  auto fill = [&](float* dst) {
    for (size_t g = 0; g < group_; ++g) {
      kernels::qs16_wxgemm_pack_w(cfg_, cg, k_, w.data<int8_t>() + g * cg * k_, bias ? bias + g * cg : nullptr,
                                  multiplier + g * cg, x_zp, x_unsigned,
                                  reinterpret_cast<uint8_t*>(dst) + g * panel_bytes_);
    }
  };
  if (packs && weight) {
    const std::string family = std::string("q16.conv.wx.") + cfg_.name;
    auto key = [&] {
      return pack_key(family.c_str(), *weight,
                      {co_, k_, group_, static_cast<uint64_t>(x_zp), x_unsigned ? 1u : 0u, baked});
    };
    return pack_weights(packs, *weight, key, floats, &packed_, fill);
  }
  if (!packed_.resize(floats)) return false;
  fill(packed_.data());
  return true;
}

size_t QConv16Wx::scratch_floats(const Conv2dGeometry& g) const {
  size_t padded = 0;
  if (!is_pointwise_unpadded(g) && g.ho != 0 && g.wo != 0) {
    padded = ((g.c / g.group) * PaddedShape(g).plane + cfg_.nr) * sizeof(uint16_t);  // + the packer's overread
  }
  return (packed_x_bytes() + padded + sizeof(float) - 1) / sizeof(float);
}

Status QConv16Wx::run(const Conv2dGeometry& g, const uint16_t* x_all, uint16_t* y_all,
                      const kernels::Qs16GemmRequant& rq, RunContext& rc, const std::string& label) {
  const size_t p = g.ho * g.wo, hw = g.h * g.w;
  const size_t cin_g = g.c / g.group, cg = co_ / g.group;
  if (p == 0 || g.n == 0) return ok_status();
  direct_ = is_pointwise_unpadded(g);
  uint16_t* buf = nullptr;
  row_offset_.resize(k_);
  const PaddedShape shape(g);
  if (direct_) {
    for (size_t kk = 0; kk < k_; ++kk) row_offset_[kk] = kk * hw;
    row_elems_ = g.w;
  } else {
    if (rc.scratch.floats() < scratch_floats(g)) return internal_error(label + ": scratch too small");
    buf = reinterpret_cast<uint16_t*>(reinterpret_cast<uint8_t*>(rc.scratch.get(0)) + packed_x_bytes());
    size_t* o = row_offset_.data();
    for (size_t c = 0; c < cin_g; ++c)
      for (size_t ky = 0; ky < g.kh; ++ky)
        for (size_t kx = 0; kx < g.kw; ++kx)
          *o++ = c * shape.plane + ky * g.dh * shape.row_elems + (kx * g.dw % g.sw) * shape.cols + kx * g.dw / g.sw;
    row_elems_ = shape.row_elems;
  }
  const kernels::GemmTasks tasks = kernels::gemm_tasks(cfg_.nr, cfg_.mr, p, cg, k_, rc.pool.threads());
  const auto pad = static_cast<uint16_t>(x_zp_);
  for (size_t n = 0; n < g.n; ++n) {
    for (size_t gi = 0; gi < g.group; ++gi) {
      const uint16_t* x = x_all + (n * g.c + gi * cin_g) * hw;
      uint16_t* y = y_all + (n * co_ + gi * cg) * p;
      const uint8_t* w = reinterpret_cast<const uint8_t*>(packed_.data()) + gi * panel_bytes_;
      if (!direct_) {
        const size_t cstep = std::max<size_t>(1, (cin_g + rc.pool.threads() * 4 - 1) / (rc.pool.threads() * 4));
        rc.pool.run((cin_g + cstep - 1) / cstep, [&](size_t i, size_t) {
          fill_padded(g, shape, x, pad, i * cstep, std::min(cin_g, (i + 1) * cstep), buf);
        });
      }
      const uint16_t* base = direct_ ? x : buf;
      rc.pool.run(tasks.count(), [&](size_t i, size_t worker) {
        size_t p0, p1, c0, c1;
        tasks.range(i, p, cg, &p0, &p1, &c0, &c1);
        task(g, base, w, y, p0, p1, c0, c1, rq, rc.scratch.get(worker));
      });
    }
  }
  return ok_status();
}

void QConv16Wx::task(const Conv2dGeometry& g, const uint16_t* base, const uint8_t* w, uint16_t* y, size_t p0, size_t p1,
                     size_t c0, size_t c1, const kernels::Qs16GemmRequant& rq, float* scratch) const {
  const size_t p = g.ho * g.wo, mr = cfg_.mr, nr = cfg_.nr, kp = kpad();
  const size_t w_panel = kernels::qs16_wxgemm_packed_w_size(cfg_, mr, k_);
  int16_t* packed_x = reinterpret_cast<int16_t*>(scratch);
  constexpr size_t kMaxPanels = kMaxBlock / 32;
  kernels::Qs16WxRun runs[kMaxPanels][32];  // one per output-row segment of a panel: at most NR
  kernels::Qs16WxPanel panels[kMaxPanels];
  for (size_t pb = p0; pb < p1; pb += block_) {
    const size_t len = std::min(block_, p1 - pb);
    size_t n_panels = 0;
    for (size_t j = 0; j < len; j += nr) {
      const size_t q0 = pb + j, cols = std::min(nr, len - j);
      size_t count = 0;
      if (direct_ && cols < nr) {  // the input's last pixels: nothing after them may be read
        kernels::qs16_wxgemm_pack_x(cfg_, k_, cols, base + q0, g.h * g.w, x_unsigned_, packed_x + j * kp);
        continue;
      }
      kernels::Qs16WxRun* r = runs[n_panels];
      if (direct_) {
        r[count++] = {0, static_cast<uint32_t>(q0), static_cast<uint32_t>(cols)};
      } else {
        for (size_t q = q0; q < q0 + cols; ++count) {
          const size_t oy = q / g.wo, ox0 = q % g.wo, seg = std::min(g.wo - ox0, q0 + cols - q);
          r[count] = {static_cast<uint32_t>(q - q0), static_cast<uint32_t>(oy * g.sh * row_elems_ + ox0),
                      static_cast<uint32_t>(seg)};
          q += seg;
        }
      }
      panels[n_panels++] = {cols, r, count, packed_x + j * kp};
    }
    kernels::qs16_wxgemm_pack_x_panels(cfg_, k_, panels, n_panels, base, row_offset_.data(), x_unsigned_);
    for (size_t c = c0; c < c1; c += mr) {
      const uint8_t* wp = w + c / mr * w_panel;
      for (size_t j = 0; j < len; j += nr) {
        cfg_.ukernel(std::min(mr, c1 - c), std::min(nr, len - j), kp, wp, packed_x + j * kp, y + c * p + pb + j, p, rq);
      }
    }
  }
}

}  // namespace nfuse::backends::cpu
