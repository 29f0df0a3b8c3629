// Integer members of fused groups, bit-exact with the ref kernels (kernels/quant_arithmetic.h):
//   QLinearConv 1x1 (stride 1, no padding, one group) on the qu8 W * X GEMM (qu8_wxgemm.h: the
//     VNNI kernel where the CPU has it, its scalar statement elsewhere), X panels packed straight
//     from the strip's input rows;
//   any other non-depthwise QLinearConv (KxK, strides, pads, dilations, groups) on the same GEMM,
//     X panels packed from the strip's window padded as the cpu op pads whole planes;
//   depthwise QLinearConv: 3x3 on the direct u8 kernel (qu8_dwconv.h) where the CPU has it, else
//     (up to 514 taps) on the f32 depthwise kernels exactly as the cpu op's f32 path: the
//     window's rows become f32 (x - x_zp) with the padding 0 in L1 scratch (every product and
//     partial sum is an integer below 2^24, so the f32 sums are the exact int32 ones), then bias
//     and the qu8 requantization (qu8_vcvt.h);
//   com.microsoft QLinearAdd with two full-shape operands on the q8-vbinary kernels (in place on
//     the rows the previous member wrote).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/cpu/cpu_q8_dw_taps.h"
#include "backends/cpu/cpu_qconv_padded.h"
#include "backends/cpu/cpu_qconv_wx.h"
#include "backends/cpu/cpu_qlinear_conv_params.h"
#include "backends/fusion/strip_layer_impl.h"
#include "kernels/f32-dwconv/f32_dwconv.h"
#include "kernels/q8-vbinary/q8_vbinary.h"
#include "kernels/qu8-dwconv/qu8_dwconv.h"
#include "kernels/qu8-gemm/qu8_wxgemm.h"
#include "kernels/qu8-vcvt/qu8_vcvt.h"
#include "kernels/quant_arithmetic.h"
#include "kernels/x8-lut/x8_lut.h"
#include "ops/fused_epilogue.h"

namespace nfuse::backends::fusion {
namespace {

constexpr size_t kWxBlock = 512;  // pixels per packed X block (kpad x 512 bytes: L2-resident)

// Pixels of the packed X block for strips of `rows` rows: no more than a strip has, since the
// block is part of the scratch that the strip height is chosen to keep in L2.
size_t wx_block(size_t rows, size_t width, size_t nr) { return std::min(kWxBlock, (rows * width + nr - 1) / nr * nr); }

const kernels::Qu8WxConfig& wx_config() {
  const kernels::Qu8WxConfig* c = kernels::qu8_wxgemm_config(kernels::selected_isa());
  return c ? *c : *kernels::qu8_wxgemm_config(kernels::Isa::kScalar);
}

int32_t qmin_of(bool s) { return s ? -128 : 0; }
int32_t qmax_of(bool s) { return s ? 127 : 255; }

// The W * X panels of every group of QLinearConv `weight` ([m][k] int8 per group, with q's bias,
// multipliers and x zero point baked in) into *out, through `packs` when there is a store: a
// context binary's panels are then read in place and the int8 weights not at all. The key names
// everything the bytes depend on, as the cpu op's does (its own family: the cpu op may pick
// another kernel configuration).
bool pack_wx(const kernels::Qu8WxConfig& cfg, const QConvParams& q, const ir::Value& weight, size_t group,
             PackStore* packs, PackedFloats* out, size_t* panel_bytes) {
  const size_t cg = q.m / group;
  *panel_bytes = kernels::qu8_wxgemm_packed_w_size(cfg, cg, q.k);
  const size_t floats = (*panel_bytes * group + sizeof(float) - 1) / sizeof(float);
  const std::string family = std::string("q8.strip.wx.") + cfg.name;
  auto key = [&] {
    return pack_key(family.c_str(), weight,
                    {q.m, q.k, group, static_cast<uint64_t>(q.x_zp), q.x_signed ? 1u : 0u,
                     cpu::qconv_values_hash(q.bias.data(), q.mult, q.m)});
  };
  return pack_weights(packs, weight, key, floats, out, [&](float* dst) {
    // The weights are read only when the store has no panels.
    cpu::pack_wx_panels(cfg, q.m, q.k, group, weight.constant->data<int8_t>(), q.bias.data(), q.mult.data(), q.x_zp,
                        q.x_signed, reinterpret_cast<uint8_t*>(dst));
  });
}

class StripQConv1x1 final : public StripLayer {
 public:
  StripQConv1x1(const QConvParams& q) : q_(q), cfg_(wx_config()) {
    kpad_ = (q.k + 3) / 4 * 4;
    rq_ = kernels::qu8_requant(q.y_signed, q.y_zp, qmin_of(q.y_signed), qmax_of(q.y_signed));
  }

  bool pack(const ir::Value& weight, PackStore* packs) {
    size_t panel_bytes = 0;
    return pack_wx(cfg_, q_, weight, 1, packs, &packed_, &panel_bytes);
  }

  size_t scratch_floats(size_t rows) const override {
    return (kpad_ * wx_block(rows, out.w, cfg_.nr) + sizeof(float) - 1) / sizeof(float);
  }

  void run(const RowView& x, const std::vector<RowView>&, const RowView& y, size_t y0, size_t y1,
           float* ws) const override {
    const size_t np = (y1 - y0) * out.w, mr = cfg_.mr, nr = cfg_.nr;
    const size_t w_panel = kernels::qu8_wxgemm_packed_w_size(cfg_, mr, q_.k);
    auto* px = reinterpret_cast<uint8_t*>(ws);
    const uint8_t* xr = x.row<uint8_t>(0, y0);
    for (size_t pb = 0; pb < np; pb += kWxBlock) {
      const size_t len = std::min(kWxBlock, np - pb);
      for (size_t j = 0; j < len; j += nr)
        kernels::qu8_wxgemm_pack_x(cfg_, q_.k, std::min(nr, len - j), xr + pb + j, x.plane_stride, q_.x_signed,
                                   px + j * kpad_);
      for (size_t c = 0; c < q_.m; c += mr) {
        const uint8_t* wp = reinterpret_cast<const uint8_t*>(packed_.data()) + c / mr * w_panel;
        for (size_t j = 0; j < len; j += nr)
          cfg_.ukernel(std::min(mr, q_.m - c), std::min(nr, len - j), kpad_, wp, px + j * kpad_,
                       y.row<uint8_t>(c, y0) + pb + j, y.plane_stride, rq_);
      }
    }
  }

 private:
  QConvParams q_;
  const kernels::Qu8WxConfig& cfg_;
  size_t kpad_ = 0;
  PackedFloats packed_;  // uint8 panels
  kernels::Qu8GemmRequant rq_;
};

// Any other QLinearConv (KxK, strided, padded, dilated, grouped) on the same W * X GEMM: each
// strip's window padded with x_zp and split into stride phases from the line buffer, as the cpu
// op pads whole planes (cpu_qconv_padded.h), and its im2col columns packed straight from there.
class StripQConv final : public WindowedLayer {
 public:
  StripQConv(const ops::ConvGeometry& g, const QConvParams& q)
      : WindowedLayer(g), cfg_(wx_config()), padded_(group_geometry(g), q.x_zp, q.x_signed) {
    group_ = static_cast<size_t>(g.group);
    cin_g_ = in.c / group_;
    cg_ = out.c / group_;
    k_ = cin_g_ * kh_ * kw_;
    kpad_ = (k_ + 3) / 4 * 4;
    rq_ = kernels::qu8_requant(q.y_signed, q.y_zp, qmin_of(q.y_signed), qmax_of(q.y_signed));
  }

  bool pack(const QConvParams& q, const ir::Value& weight, PackStore* packs) {
    return pack_wx(cfg_, q, weight, group_, packs, &packed_, &panel_bytes_);
  }

  // The packed X block, then the K row offsets, then the padded window.
  size_t scratch_floats(size_t rows) const override {
    return (window_offset(rows) + padded_.buffer_bytes(rows) + sizeof(float) - 1) / sizeof(float);
  }

  void run(const RowView& x, const std::vector<RowView>&, const RowView& y, size_t y0, size_t y1,
           float* ws) const override {
    auto* px = reinterpret_cast<uint8_t*>(ws);
    auto* offsets = reinterpret_cast<size_t*>(px + block_bytes(y1 - y0));
    uint8_t* win = px + window_offset(y1 - y0);
    padded_.row_offsets(y1 - y0, offsets);
    const size_t rows_end = input_rows(y0, y1).hi;
    const size_t np = (y1 - y0) * out.w, mr = cfg_.mr, nr = cfg_.nr;
    const size_t w_panel = kernels::qu8_wxgemm_packed_w_size(cfg_, mr, k_);
    for (size_t gi = 0; gi < group_; ++gi) {
      const cpu::PlaneRowsOf<const uint8_t> planes{static_cast<const uint8_t*>(x.data) + gi * cin_g_ * x.plane_stride,
                                                   x.plane_stride, x.width, x.base};
      padded_.fill(planes, rows_end, 0, cin_g_, y0, y1, win);
      const uint8_t* w = reinterpret_cast<const uint8_t*>(packed_.data()) + gi * panel_bytes_;
      for (size_t pb = 0; pb < np; pb += kWxBlock) {
        const size_t len = std::min(kWxBlock, np - pb);
        for (size_t j = 0; j < len; j += nr)
          padded_.pack_panel(cfg_, offsets, pb + j, std::min(nr, len - j), win, px + j * kpad_);
        for (size_t c = 0; c < cg_; c += mr) {
          for (size_t j = 0; j < len; j += nr)
            cfg_.ukernel(std::min(mr, cg_ - c), std::min(nr, len - j), kpad_, w + c / mr * w_panel, px + j * kpad_,
                         y.row<uint8_t>(gi * cg_ + c, y0) + pb + j, y.plane_stride, rq_);
        }
      }
    }
  }

 private:
  static cpu::Conv2dGeometry group_geometry(const ops::ConvGeometry& g) {
    auto u = [](int64_t v) { return static_cast<size_t>(v); };
    cpu::Conv2dGeometry c;
    c.n = u(g.batch), c.c = u(g.in_channels), c.h = u(g.in[0]), c.w = u(g.in[1]);
    c.m = u(g.out_channels), c.ho = u(g.out[0]), c.wo = u(g.out[1]), c.group = u(g.group);
    c.kh = u(g.kernel[0]), c.kw = u(g.kernel[1]), c.sh = u(g.strides[0]), c.sw = u(g.strides[1]);
    c.dh = u(g.dilations[0]), c.dw = u(g.dilations[1]), c.pad_top = u(g.pad_begin[0]), c.pad_left = u(g.pad_begin[1]);
    return c;
  }
  size_t block_bytes(size_t rows) const { return (kpad_ * wx_block(rows, out.w, cfg_.nr) + 63) / 64 * 64; }
  size_t window_offset(size_t rows) const { return block_bytes(rows) + (k_ * sizeof(size_t) + 63) / 64 * 64; }

  const kernels::Qu8WxConfig& cfg_;
  cpu::QConvPaddedRows padded_;
  size_t group_ = 1, cin_g_ = 0, cg_ = 0, k_ = 0, kpad_ = 0, panel_bytes_ = 0;
  PackedFloats packed_;  // uint8 panels, one block per group
  kernels::Qu8GemmRequant rq_;
};

class StripQDwConv final : public WindowedLayer {
 public:
  StripQDwConv(const ops::ConvGeometry& g, const QConvParams& q) : WindowedLayer(g), q_(q) {
    fn_ = kernels::f32_dwconv_select(kernels::selected_isa(), kh_, kw_, sh_, sw_, dh_, dw_);
    vcvt_ = kernels::qu8_vcvt_select(kernels::selected_isa());
    rq_ = kernels::qu8_requant(q.y_signed, q.y_zp, qmin_of(q.y_signed), qmax_of(q.y_signed));
    const bool shape_ok = kh_ == 3 && kw_ == 3 && dh_ == 1 && dw_ == 1 && (sh_ == 1 || sh_ == 2) && (sw_ == 1 || sw_ == 2);
    direct_ = shape_ok ? kernels::qu8_dwconv3x3_select(kernels::selected_isa()) : nullptr;
  }

  // The taps, through `packs` as the cpu op packs them, and the direct kernel's columns built
  // from that copy; false when memory runs out.
  bool pack(const ir::Value& weight, PackStore* packs) {
    if (!taps_.pack(weight, *weight.constant, packs)) return false;
    if (direct_) columns_ = taps_.direct_columns(q_.bias.data(), q_.x_zp + (q_.x_signed ? 128 : 0));
    return true;
  }

  size_t scratch_floats(size_t rows) const override {
    if (direct_) return (window_rows(rows) * direct_stride() + sizeof(float) - 1) / sizeof(float);
    return window_rows(rows) * stride() + rows * out.w;
  }

  void run(const RowView& x, const std::vector<RowView>&, const RowView& y, size_t y0, size_t y1,
           float* ws) const override {
    if (direct_) {
      run_direct(x, y, y0, y1, reinterpret_cast<uint8_t*>(ws));
      return;
    }
    run_f32(x, y, y0, y1, ws);
  }

 private:
  size_t window_rows(size_t rows) const { return (rows - 1) * sh_ + (kh_ - 1) * dh_ + 1; }
  size_t stride() const { return ((out.w - 1) * sw_ + (kw_ - 1) * dw_ + 1 + 32 + 15) / 16 * 16; }
  size_t direct_stride() const {
    return std::max((out.w - 1) * sw_ + 3, kernels::qu8_dwconv_row_bytes(out.w, sw_));
  }

  // The direct u8 kernel (AVX-512 VNNI + VBMI) on the window's rows copied with their padding
  // written as the input zero point (s8: sign bit flipped), as the cpu op does for whole planes.
  void run_direct(const RowView& x, const RowView& y, size_t y0, size_t y1, uint8_t* win) const {
    const size_t rows = window_rows(y1 - y0), st = direct_stride(), cols = (out.w - 1) * sw_ + 3;
    const int64_t first = static_cast<int64_t>(y0 * sh_) - static_cast<int64_t>(pt_);
    const size_t left = std::min(pl_, cols), n_copy = cols > left ? std::min(in.w, cols - left) : 0;
    const auto zp = static_cast<uint8_t>(q_.x_zp + (q_.x_signed ? 128 : 0));
    for (size_t c = 0; c < out.c; ++c) {
      for (size_t r = 0; r < rows; ++r) {
        uint8_t* d = win + r * st;
        const int64_t iy = first + static_cast<int64_t>(r);
        if (iy < 0 || iy >= static_cast<int64_t>(in.h)) {
          std::memset(d, zp, st);
          continue;
        }
        std::memset(d, zp, left);
        const uint8_t* src = x.row<uint8_t>(c, static_cast<size_t>(iy));
        if (q_.x_signed) {
          for (size_t j = 0; j < n_copy; ++j) d[left + j] = static_cast<uint8_t>(src[j] ^ 0x80);
        } else {
          std::memcpy(d + left, src, n_copy);
        }
        std::memset(d + left + n_copy, zp, st - left - n_copy);
      }
      kernels::Qu8DwconvParams p;
      p.in = win;
      p.in_stride = st;
      for (size_t kx = 0; kx < 3; ++kx) p.w[kx] = columns_[c].w[kx];
      p.bias = columns_[c].bias;
      p.multiplier = q_.mult[c];
      p.rq = rq_;
      p.out = y.row<uint8_t>(c, y0);
      p.out_stride = y.width;
      p.out_width = out.w;
      p.sh = sh_;
      p.sw = sw_;
      direct_(p, 0, y1 - y0);
    }
  }

  // The f32 path (any window of at most 514 taps, or no direct kernel on this CPU): the window's
  // rows unpacked to f32 (x - x_zp) with the padding 0, the f32 kernel's exact sums, and the
  // vectorised requantization (qu8_vcvt.h), as the cpu op does for whole planes.
  void run_f32(const RowView& x, const RowView& y, size_t y0, size_t y1, float* ws) const {
    const size_t rows = window_rows(y1 - y0), st = stride(), n = (y1 - y0) * out.w;
    const int64_t first = static_cast<int64_t>(y0 * sh_) - static_cast<int64_t>(pt_);
    const size_t left = std::min(pl_, st), n_copy = std::min(in.w, st - left);
    const uint8_t flip = q_.x_signed ? 0x80 : 0;
    const int32_t zp = q_.x_zp + (q_.x_signed ? 128 : 0);
    float* win = ws;
    float* acc = ws + rows * st;
    for (size_t c = 0; c < out.c; ++c) {
      fill_padded_window(win, rows, st, left, n_copy, first, in.h, [&](float* d, size_t iy) {
        vcvt_.unpack(x.row<uint8_t>(c, iy), n_copy, flip, zp, d);
      });
      kernels::F32DwconvParams p;
      p.in = win;
      p.in_stride = st;
      p.in_height = rows;
      p.in_width = st;
      p.w = taps_.f32(c);
      p.out = acc;
      p.out_stride = out.w;
      p.out_width = out.w;
      set_window(&p);
      fn_(p, 0, y1 - y0);
      vcvt_.requant(acc, n, q_.bias[c], q_.mult[c], rq_, y.row<uint8_t>(c, y0));
    }
  }

  QConvParams q_;
  cpu::Q8DwTaps taps_;
  kernels::F32DwconvFn fn_ = nullptr;
  kernels::Qu8DwconvFn direct_ = nullptr;
  kernels::Qu8VcvtKernels vcvt_{};
  kernels::Qu8GemmRequant rq_;
  std::vector<cpu::Q8DwTaps::DirectColumn> columns_;  // the direct kernel's, per channel
};

// y = QLinearAdd(a, b) with both operands full-shape; the main input is a or b (kept in ref's
// order for the kernel's FMA).
class StripQAdd final : public ElementwiseLayer {
 public:
  StripQAdd(const kernels::Q8VbinaryParams& p, bool main_is_a, bool is_signed)
      : p_(p), main_is_a_(main_is_a), signed_(is_signed),
        add_u8_(kernels::qu8_vbinary_config(kernels::selected_isa()).add),
        add_s8_(kernels::qs8_vbinary_config(kernels::selected_isa()).add) {}

  void apply_channel(const void* xv, void* yv, size_t c, size_t y0, size_t n,
                     const std::vector<RowView>& ext) const override {
    if (signed_) {
      const auto* x = static_cast<const int8_t*>(xv);
      const int8_t* e = ext[0].row<int8_t>(c, y0);
      add_s8_(main_is_a_ ? x : e, main_is_a_ ? e : x, static_cast<int8_t*>(yv), n, p_);
    } else {
      const auto* x = static_cast<const uint8_t*>(xv);
      const uint8_t* e = ext[0].row<uint8_t>(c, y0);
      add_u8_(main_is_a_ ? x : e, main_is_a_ ? e : x, static_cast<uint8_t*>(yv), n, p_);
    }
  }

 private:
  kernels::Q8VbinaryParams p_;
  bool main_is_a_, signed_;
  kernels::Q8VbinaryFn<uint8_t> add_u8_;
  kernels::Q8VbinaryFn<int8_t> add_s8_;
};

// nfuse.QLinearLookup (an int8 HardSwish, Sigmoid, ... as a 256-byte table), in place on the
// rows the member before it wrote.
class StripQLookup final : public ElementwiseLayer {
 public:
  StripQLookup(const uint8_t* table, bool signed_input)
      : fn_(kernels::x8_lut_kernel(kernels::selected_isa())) {
    kernels::x8_lut_index_table(table, signed_input, table_);
  }

  void apply_channel(const void* x, void* y, size_t, size_t, size_t n, const std::vector<RowView>&) const override {
    fn_(static_cast<const uint8_t*>(x), static_cast<uint8_t*>(y), n, table_);
  }

 private:
  kernels::X8LutFn fn_;
  alignas(64) uint8_t table_[256];
};

const ir::Tensor* const_of(const ir::Value* v) { return v && v->constant ? &*v->constant : nullptr; }
bool is_q8(ir::DType t) { return t == ir::DType::kU8 || t == ir::DType::kI8; }

}  // namespace

Rejection qconv_params(const ir::Node& node, const PlanView& type_of, QConvParams* q) {
  if (!node.input(0)) return reject(SupportReason::kUnsupportedOp, "QLinearConv without an input");
  std::string why = cpu::read_qconv_params(node, type_of(node.input(0)).dtype, q);
  return why.empty() ? Rejection{} : reject(SupportReason::kUnsupportedOp, std::move(why));
}

Rejection qadd_params(const ir::Node& node, const PlanView& type_of, kernels::Q8VbinaryParams* p) {
  const ir::Value* a = node.input(0);
  const ir::Value* b = node.input(3);
  if (!a || !b || node.num_inputs() < 8 || !node.input(7))
    return reject(SupportReason::kUnsupportedOp, "QLinearAdd operands");
  const ir::DType t = type_of(a).dtype;
  if (!is_q8(t) || type_of(b).dtype != t)
    return reject(SupportReason::kDtype, "QLinearAdd of " + std::string(ir::dtype_name(t)));
  if (type_of(a).shape != type_of(b).shape)
    return reject(SupportReason::kUnsupportedOp, "QLinearAdd with broadcasting");
  auto scale = [](const ir::Value* v) -> float {
    const ir::Tensor* c = const_of(v);
    return c && c->dtype() == ir::DType::kF32 && c->numel() == 1 ? c->data<float>()[0] : NAN;
  };
  auto zp = [&](const ir::Value* v, int32_t* out) {
    if (!v) return (*out = 0, true);
    const ir::Tensor* c = const_of(v);
    if (!c || c->dtype() != t || c->numel() != 1) return false;
    *out = static_cast<int32_t>(c->get_int(0));
    return true;
  };
  const float as = scale(node.input(1)), bs = scale(node.input(4)), ys = scale(node.input(6));
  if (!zp(node.input(2), &p->a_zp) || !zp(node.input(5), &p->b_zp) || !zp(node.input(7), &p->y_zp))
    return reject(SupportReason::kUnsupportedOp, "QLinearAdd with non-constant zero points");
  p->a_mult = as / ys;  // exactly as ref_qlinear_binary.cpp
  p->b_mult = bs / ys;
  if (!std::isfinite(p->a_mult) || !std::isfinite(p->b_mult))
    return reject(SupportReason::kUnsupportedOp, "QLinearAdd scales");
  return {};
}

Result<std::unique_ptr<StripLayer>> make_strip_qconv(const ir::Node& node, const PlanView& type_of, PackStore* packs) {
  if (!node.input(0) || !node.input(3) || !node.input(3)->constant)
    return unsupported(node.label() + ": QLinearConv without a constant weight");
  auto x_dims = type_of(node.input(0)).shape.static_dims();
  if (!x_dims) return unsupported(node.label() + ": QLinearConv input without static dims");
  NFUSE_ASSIGN_OR_RETURN(ops::ConvGeometry g, ops::resolve_conv(node.attrs, *x_dims, node.input(3)->constant->dims()));
  const bool depthwise = g.group > 1 && g.group == g.in_channels && g.group == g.out_channels;
  // Every member packs from the weight tensor itself (pack_wx, Q8DwTaps): no copy of the int8
  // weights here.
  QConvParams q;
  if (Rejection why = qconv_params(node, type_of, &q); !why.empty())
    return unsupported(node.label() + ": " + why.text());
  std::unique_ptr<StripLayer> layer;
  const bool pointwise = g.group == 1 && g.kernel[0] * g.kernel[1] == 1 && g.strides[0] == 1 && g.strides[1] == 1 &&
                         g.pad_begin[0] == 0 && g.pad_begin[1] == 0 && g.out[0] == g.in[0] && g.out[1] == g.in[1];
  if (depthwise) {
    auto conv = std::make_unique<StripQDwConv>(g, q);
    if (!conv->pack(*node.input(3), packs)) return out_of_memory(node.label() + ": depthwise taps");
    layer = std::move(conv);
  } else if (!pointwise) {
    auto conv = std::make_unique<StripQConv>(g, q);
    if (!conv->pack(q, *node.input(3), packs)) return out_of_memory(node.label() + ": packed weights");
    layer = std::move(conv);
  } else {
    auto conv = std::make_unique<StripQConv1x1>(q);
    if (!conv->pack(*node.input(3), packs)) return out_of_memory(node.label() + ": packed weights");
    conv->in = {static_cast<size_t>(g.in_channels), static_cast<size_t>(g.in[0]), static_cast<size_t>(g.in[1])};
    conv->out = {static_cast<size_t>(g.out_channels), static_cast<size_t>(g.out[0]), static_cast<size_t>(g.out[1])};
    layer = std::move(conv);
  }
  layer->in.elem = layer->out.elem = 1;
  return layer;
}

Rejection qlookup_rejection(const ir::Node& node, const PlanView& type_of) {
  const ir::Value* x = node.input(0);
  const ir::Value* table = node.input(1);
  if (!x || !table || node.outputs.size() != 1 || !node.output(0))
    return reject(SupportReason::kUnsupportedOp, "QLinearLookup operands");
  if (!is_q8(type_of(x).dtype))
    return reject(SupportReason::kDtype, "QLinearLookup of " + std::string(ir::dtype_name(type_of(x).dtype)));
  const ir::Tensor* t = const_of(table);
  if (!t || t->numel() != 256 || !is_q8(t->dtype()) || type_of(node.output(0)).dtype != t->dtype())
    return reject(SupportReason::kUnsupportedOp,
                  "QLinearLookup without a constant 256-entry table of its output's type");
  if (ops::has_fused_epilogue(node))
    return reject(SupportReason::kUnsupportedOp, "QLinearLookup with a fused epilogue");
  if (Rejection why = rank_or_shape(type_of, x, "input"); !why.empty()) return why;
  return rank_or_shape(type_of, node.output(0), "output");
}

Result<std::unique_ptr<StripLayer>> make_strip_qlookup(const ir::Node& node, const PlanView& type_of) {
  if (Rejection why = qlookup_rejection(node, type_of); !why.empty())
    return unsupported(node.label() + ": " + why.text());
  auto layer = std::make_unique<StripQLookup>(static_cast<const uint8_t*>(const_of(node.input(1))->raw()),
                                              type_of(node.input(0)).dtype == ir::DType::kI8);
  auto d = *type_of(node.output(0)).shape.static_dims();
  layer->in = layer->out = {static_cast<size_t>(d[1]), static_cast<size_t>(d[2]), static_cast<size_t>(d[3]), 1};
  return std::unique_ptr<StripLayer>(std::move(layer));
}

Result<std::unique_ptr<StripLayer>> make_strip_qadd(const ir::Node& node, const PlanView& type_of, int main_input) {
  kernels::Q8VbinaryParams p;
  if (Rejection why = qadd_params(node, type_of, &p); !why.empty())
    return unsupported(node.label() + ": " + why.text());
  const bool main_is_a = main_input == 0;
  auto layer = std::make_unique<StripQAdd>(p, main_is_a, type_of(node.input(0)).dtype == ir::DType::kI8);
  auto d = *type_of(node.output(0)).shape.static_dims();
  layer->in = layer->out = {static_cast<size_t>(d[1]), static_cast<size_t>(d[2]), static_cast<size_t>(d[3]), 1};
  layer->externals.push_back(node.input(main_is_a ? 3 : 0));
  layer->external_kinds.push_back(StripLayer::Operand::kFull);
  layer->external_constant.push_back(false);
  return std::unique_ptr<StripLayer>(std::move(layer));
}

}  // namespace nfuse::backends::fusion
