// nfuse.QLinearConv16 (W8A16, src/ops/qlinear16.cpp) on the cpu backend: 2-D NCHW, i16 or u16
// activations and outputs, s8 weights with zero w_zp (per tensor or per output channel), int32
// bias, any stride / pad / dilation / group. Bit-exact with the ref kernel.
//
// Convolutions with more than one input channel per group run, where the selected ISA has a
// W * X kernel (AVX-512 VNNI, scalar), in that orientation (cpu_qconv16_wx.h: no transposes, no
// im2col matrix).
// Elsewhere (AVX2, NEON) they run on the qs16 GEMM
// (src/kernels/qs16-gemm/qs16_gemm.h) as cpu_qlinear_conv.cpp runs the int8 ones: output pixels
// are GEMM rows and output channels columns (per-column multipliers live in packed B); a 1x1
// stride-1 unpadded convolution reads the NCHW input in place (column stride H*W); otherwise the
// group's input is transposed to NHWC and an im2col matrix [pixels x K] (K in (ky, kx, c) order,
// weights reordered to match at pack time) is built from one C/group run per tap, padding taps
// holding x_zp. C lands as [pixels x Co] and one pass transposes it into NCHW.
// Depthwise convolutions (one input channel per group) run the qs16-dwconv row kernels (column
// runs per tap, int32 accumulators where the channel's bias and weights bound the sum below 2^31,
// int64 otherwise, ref's rounding), parallel over (image, channel).
// Covered only with constant scales, zero points, weights and bias; otherwise nullptr (ref).
#include <algorithm>
#include <cstring>

#include "backends/cpu/cpu_conv_util.h"
#include "backends/cpu/cpu_qconv16_wx.h"
#include "backends/cpu/cpu_qlinear16_util.h"
#include "backends/cpu/cpu_qlinear_conv16_rows.h"
#include "backends/cpu/cpu_qlinear_conv_params.h"
#include "backends/pack_store.h"
#include "kernels/qs16-dwconv/qs16_dwconv.h"
#include "kernels/qs16-gemm/qs16_gemm.h"

namespace nfuse::backends::cpu {

bool pack_qs16_conv_weights(const kernels::Qs16GemmConfig& cfg, const W8A16Params& p, const int32_t* bias, size_t group,
                            PackStore* packs, const ir::Value* weight, PackedFloats* packed, size_t* panel_bytes) {
  const size_t co = static_cast<size_t>(p.w->dim(0)), k = static_cast<size_t>(p.w->numel()) / co;
  const size_t cg = co / group;
  *panel_bytes = kernels::qs16_gemm_packed_b_size(cfg, k, cg);
  const size_t bytes = *panel_bytes;
  auto fill = [&](float* dst) {
    const size_t cin_g = static_cast<size_t>(p.w->dim(1)), taps = k / cin_g;
    const int8_t* w = p.w->data<int8_t>();
    std::vector<int8_t> wr(static_cast<size_t>(p.w->numel()));  // K in (ky, kx, c) order
    for (size_t o = 0; o < co; ++o)
      for (size_t c = 0; c < cin_g; ++c)
        for (size_t t = 0; t < taps; ++t) wr[o * k + t * cin_g + c] = w[o * k + c * taps + t];
    for (size_t g = 0; g < group; ++g) {
      kernels::qs16_gemm_pack_b(cfg, k, cg, wr.data() + g * cg * k, 1, k, bias ? bias + g * cg : nullptr,
                                p.mult.data() + g * cg, p.x_zp, p.x_unsigned,
                                reinterpret_cast<uint8_t*>(dst) + g * bytes);
    }
  };
  const size_t floats = (bytes * group + sizeof(float) - 1) / sizeof(float);
  if (packs && weight) {
    const std::string family = std::string("q16.conv.gemm.") + cfg.name;
    auto key = [&] {
      return pack_key(
          family.c_str(), *weight,
          {co, k, group, static_cast<uint64_t>(p.x_zp), p.x_unsigned ? 1u : 0u, qconv_values_hash(bias, p.mult, co)});
    };
    return pack_weights(packs, *weight, key, floats, packed, fill);
  }
  if (!packed->resize(floats)) return false;
  fill(packed->data());
  return true;
}

void qlinear_dwconv16_rows(const Conv2dGeometry& g, const W8A16Params& p, const int64_t* bias, size_t m,
                           const PlaneRowsOf<const uint16_t>& x, const PlaneRowsOf<uint16_t>& y, size_t y0,
                           size_t y1) {
  const kernels::Qs16DwRowFn row_fn = kernels::qs16_dwconv_row_select(kernels::selected_isa());
  const size_t taps = g.kh * g.kw;
  kernels::Qs16DwRow r;
  r.w = g.w, r.wo = g.wo, r.kh = g.kh, r.kw = g.kw, r.sw = g.sw, r.dw = g.dw, r.pad_left = g.pad_left;
  r.weights = p.w->data<int8_t>() + m * taps;
  r.bias = bias[m];
  r.x_unsigned = p.x_unsigned, r.y_unsigned = p.y_unsigned;
  r.x_zp = p.x_zp, r.y_zp = p.y_zp;
  r.qmin = p.y_min, r.qmax = p.y_max;
  r.mult = p.mult[m];
  // int32 holds every partial sum when |bias| + sum_t |w_t| * max |x - x_zp| < 2^31.
  const int64_t x_lo = p.x_unsigned ? 0 : -32768, x_hi = p.x_unsigned ? 65535 : 32767;
  const int64_t x_span = std::max(std::abs(x_lo - p.x_zp), std::abs(x_hi - p.x_zp));
  int64_t w_sum = 0;
  for (size_t t = 0; t < taps; ++t) w_sum += std::abs(int64_t{r.weights[t]});
  r.acc32 = std::abs(bias[m]) + w_sum * x_span < (int64_t{1} << 31);
  constexpr size_t kStackRows = 32;
  const uint16_t* stack_rows[kStackRows];
  std::vector<const uint16_t*> heap_rows(g.kh > kStackRows ? g.kh : 0);
  const uint16_t** rows = g.kh > kStackRows ? heap_rows.data() : stack_rows;
  r.rows = rows;
  for (size_t oy = y0; oy < y1; ++oy) {
    for (size_t ky = 0; ky < g.kh; ++ky) {
      const ptrdiff_t iy = static_cast<ptrdiff_t>(oy * g.sh + ky * g.dh) - static_cast<ptrdiff_t>(g.pad_top);
      rows[ky] = iy < 0 || iy >= static_cast<ptrdiff_t>(g.h) ? nullptr : x.row(0, static_cast<size_t>(iy));
    }
    row_fn(r, y.row(0, oy));
  }
}

void nhwc16(const PlaneRowsOf<const uint16_t>& x, size_t cin_g, size_t row0, size_t s0, size_t s1, uint16_t* dst) {
  for (size_t c = 0; c < cin_g; ++c) {
    const uint16_t* src = x.row(c, row0);
    for (size_t s = s0; s < s1; ++s) dst[s * cin_g + c] = src[s];
  }
}

void im2col16(const Conv2dGeometry& g, const uint16_t* nhwc, size_t row0, uint16_t x_zp_bits, size_t p0, size_t p1,
              uint16_t* dst) {
  const size_t cin_g = g.c / g.group;
  for (size_t pi = p0; pi < p1; ++pi) {
    const size_t oy = pi / g.wo, ox = pi % g.wo;
    for (size_t ky = 0; ky < g.kh; ++ky) {
      const ptrdiff_t iy = static_cast<ptrdiff_t>(oy * g.sh + ky * g.dh) - static_cast<ptrdiff_t>(g.pad_top);
      for (size_t kx = 0; kx < g.kw; ++kx, dst += cin_g) {
        const ptrdiff_t ix = static_cast<ptrdiff_t>(ox * g.sw + kx * g.dw) - static_cast<ptrdiff_t>(g.pad_left);
        if (iy < 0 || iy >= static_cast<ptrdiff_t>(g.h) || ix < 0 || ix >= static_cast<ptrdiff_t>(g.w)) {
          std::fill(dst, dst + cin_g, x_zp_bits);
        } else {
          std::memcpy(dst, nhwc + ((static_cast<size_t>(iy) - row0) * g.w + static_cast<size_t>(ix)) * cin_g,
                      cin_g * sizeof(uint16_t));
        }
      }
    }
  }
}

namespace {

class QLinearConv16 final : public CpuOp {
 public:
  QLinearConv16(const ir::Node& node, const W8A16Params& p)
      : node_(node), w_dims_(p.w->dims()), cfg_(kernels::qs16_gemm_config()), p_(p) {
    co_ = static_cast<size_t>(p.w->dim(0));
    k_ = static_cast<size_t>(p.w->numel()) / co_;
  }

  bool pack(const int32_t* bias, size_t group, PackStore* packs) {
    group_ = group;
    if (const kernels::Qs16WxConfig* wx = QConv16Wx::config()) {  // W * X: weights [Co][K] as they are
      wx_ = std::make_unique<QConv16Wx>(*wx, co_, k_, group);
      return wx_->pack(*p_.w, bias, p_.mult.data(), p_.x_zp, p_.x_unsigned, packs, node_.input(3),
                       qconv_values_hash(bias, p_.mult, co_));
    }
    return pack_qs16_conv_weights(cfg_, p_, bias, group, packs, node_.input(3), &packed_, &panel_bytes_);
  }

  size_t scratch_floats(const OpTensors& t, size_t) const override {
    if (wx_) {
      const auto g = geo_.peek(node_.attrs, t.inputs[0]->dims(), w_dims_);
      return g ? wx_->scratch_floats(*g) : 0;
    }
    return (kernels::qs16_gemm_workspace_size(cfg_, k_) + sizeof(float) - 1) / sizeof(float);
  }

  Status run(const OpTensors& t, RunContext& rc) override {
    NFUSE_ASSIGN_OR_RETURN(const Conv2dGeometry* g, geo_.get(node_.attrs, t.inputs[0]->dims(), w_dims_));
    if (g->group != group_ || g->m != co_) return invalid_model(node_.label() + ": weights do not match the input");
    if (wx_) {
      kernels::Qs16GemmArgs q;
      set_qs16_quantization(p_, &q);
      return wx_->run(*g, static_cast<const uint16_t*>(t.inputs[0]->raw()), static_cast<uint16_t*>(t.outputs[0]->raw()),
                      kernels::qs16_requant(q.c_unsigned, q.c_zero_point, q.qmin, q.qmax), rc, node_.label());
    }
    const size_t p = g->ho * g->wo, hw = g->h * g->w;
    const size_t cin_g = g->c / g->group, cg = co_ / g->group;
    const bool direct = g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->pad_top == 0 &&
                        g->pad_left == 0 && g->ho == g->h && g->wo == g->w;
    if (!direct) {
      cols_.resize(std::max(cols_.size(), p * k_));
      nhwc_.resize(std::max(nhwc_.size(), hw * cin_g));
    }
    product_.resize(std::max(product_.size(), p * co_));
    const size_t threads = rc.pool.threads();
    const uint16_t* x_all = static_cast<const uint16_t*>(t.inputs[0]->raw());
    uint16_t* y_all = static_cast<uint16_t*>(t.outputs[0]->raw());
    for (size_t n = 0; n < g->n; ++n) {
      for (size_t gi = 0; gi < g->group; ++gi) {
        const uint16_t* x = x_all + (n * g->c + gi * cin_g) * hw;
        kernels::Qs16GemmArgs args;
        args.m = p, args.n = cg, args.k = k_;
        if (direct) {
          args.a = x, args.a_row_stride = 1, args.a_col_stride = hw;
        } else {
          const size_t sstep = std::max<size_t>(1, (hw + threads * 4 - 1) / (threads * 4));
          const PlaneRowsOf<const uint16_t> planes{x, hw, g->w, 0};
          rc.pool.run((hw + sstep - 1) / sstep, [&](size_t i, size_t) {
            nhwc16(planes, cin_g, 0, i * sstep, std::min(hw, (i + 1) * sstep), nhwc_.data());
          });
          const size_t pstep = std::max<size_t>(1, (p + threads * 4 - 1) / (threads * 4));
          const auto zp_bits = static_cast<uint16_t>(p_.x_zp);
          rc.pool.run((p + pstep - 1) / pstep, [&](size_t i, size_t) {
            const size_t p0 = i * pstep;
            im2col16(*g, nhwc_.data(), 0, zp_bits, p0, std::min(p, p0 + pstep), cols_.data() + p0 * k_);
          });
          args.a = cols_.data(), args.a_row_stride = k_, args.a_col_stride = 1;
        }
        set_qs16_quantization(p_, &args);
        args.b_packed = reinterpret_cast<const uint8_t*>(packed_.data()) + gi * panel_bytes_;
        args.c = product_.data() + gi * cg, args.c_stride = co_;
        const kernels::GemmTasks tasks = kernels::qs16_gemm_tasks(cfg_, p, cg, k_, threads);
        rc.pool.run(tasks.count(), [&](size_t i, size_t worker) {
          kernels::qs16_gemm_task(cfg_, args, tasks, i, rc.scratch.get(worker));
        });
      }
      uint16_t* y = y_all + n * co_ * p;  // [P x Co] -> NCHW
      const size_t cstep = std::max<size_t>(1, (co_ + threads * 4 - 1) / (threads * 4));
      rc.pool.run((co_ + cstep - 1) / cstep, [&](size_t i, size_t) {
        const size_t o0 = i * cstep, o1 = std::min(co_, (i + 1) * cstep);
        // 32 pixels at a time: their product rows stay in L1 while every channel of the task
        // takes its 64 contiguous bytes, instead of one product row per output element.
        for (size_t q0 = 0; q0 < p; q0 += 32) {
          const size_t q1 = std::min(p, q0 + 32);
          for (size_t o = o0; o < o1; ++o)
            for (size_t q = q0; q < q1; ++q) y[o * p + q] = product_[q * co_ + o];
        }
      });
    }
    return ok_status();
  }

 private:
  const ir::Node& node_;
  std::vector<int64_t> w_dims_;
  const kernels::Qs16GemmConfig& cfg_;
  W8A16Params p_;
  size_t co_ = 0, k_ = 0, group_ = 1, panel_bytes_ = 0;
  PackedFloats packed_;
  std::unique_ptr<QConv16Wx> wx_;                // the W * X path, where the ISA has it (packed_ then unused)
  std::vector<uint16_t> nhwc_, cols_, product_;  // grow only
  Conv2dGeometryCache geo_;
};

// Depthwise (C groups of one input channel, M = C * multiplier): the qs16-dwconv rows, on a copy
// of the input plane whose rows carry x's zero point as their left and right padding (what a
// padding tap reads: it adds (x_zp - x_zp) * w = 0), so every output column is an interior one
// for the register loops (their per-column edge handling had been 6% of the W8A16 detector).
// Stride-1 planes, and stride-2 ones narrower than kFlatBelow output columns (equal strides), run
// as one flat row instead: the copy is padded on all four sides with x_zp and output
// q = oy * wp + ox (wp the padded width) reads input (oy * s + ky) * wp + ox * s + kx =
// ky * wp + q * s + kx, so tap row ky is the copy from row ky on and one kernel call covers the
// whole plane; the wp - wo columns past each output row are computed and dropped (about half of
// them at stride 2, hence only narrow planes there). A 14- or 7-column row is shorter than one
// 16-lane vector, so row by row the kernels ran their per-column loops (MobileNetV2's late
// depthwise layers in W8A16 took ~10x their FP32 time); wider stride-1 rows still paid their
// edge columns one by one (the OCR detector's 5x5 layers at 120 columns: 1.0 -> 0.7 ms).
class QLinearDwConv16 final : public CpuOp {
 public:
  QLinearDwConv16(const ir::Node& node, const W8A16Params& p, const int32_t* bias)
      : node_(node), w_dims_(p.w->dims()), p_(p) {
    if (bias) bias_.assign(bias, bias + w_dims_[0]);
    else bias_.assign(static_cast<size_t>(w_dims_[0]), 0);
  }

  size_t scratch_floats(const OpTensors& t, size_t) const override {
    const auto g = geo_.peek(node_.attrs, t.inputs[0]->dims(), w_dims_);
    if (!g) return 0;
    const size_t elems = flat(*g) ? flat_length(*g) + g->ho * flat_width(*g) : g->h * padded_width(*g);
    return (elems * sizeof(uint16_t) + sizeof(float) - 1) / sizeof(float);
  }

  Status run(const OpTensors& t, RunContext& rc) override {
    NFUSE_ASSIGN_OR_RETURN(const Conv2dGeometry* g, geo_.get(node_.attrs, t.inputs[0]->dims(), w_dims_));
    if (g->m != static_cast<size_t>(w_dims_[0])) {
      return invalid_model(node_.label() + ": weights do not match the input");
    }
    if (rc.scratch.floats() < scratch_floats(t, 0)) return internal_error(node_.label() + ": scratch too small");
    const uint16_t* x = static_cast<const uint16_t*>(t.inputs[0]->raw());
    uint16_t* y = static_cast<uint16_t*>(t.outputs[0]->raw());
    const size_t per_group = g->m / g->group;
    const bool as_one_row = flat(*g);
    const size_t planes = g->n * g->m;
    run_items(rc.pool, planes, items_per_task(planes, g->ho * g->wo, rc.pool.threads(), kMinTaskOutputs),
              [&](size_t i, size_t worker) {
                const size_t n = i / g->m, m = i % g->m, c = m / per_group;
                const uint16_t* src = x + (n * g->c + c) * g->h * g->w;
                uint16_t* buf = reinterpret_cast<uint16_t*>(rc.scratch.get(worker));
                uint16_t* out = y + i * g->ho * g->wo;
                if (as_one_row)
                  flat_plane(*g, src, m, buf, out);
                else
                  row_plane(*g, src, m, buf, out);
              });
    return ok_status();
  }

 private:
  // Input columns every output column's taps reach (pad_left + w + the right padding), and the
  // 32 elements a stride-2 vector load reads past its first tap.
  static size_t padded_width(const Conv2dGeometry& g) {
    const size_t reach = g.wo == 0 ? 0 : (g.wo - 1) * g.sw + (g.kw - 1) * g.dw + 1;
    return std::max(reach, g.pad_left + g.w) + 32;
  }

  static constexpr size_t kFlatBelow = 32;  // output columns: narrower stride-2 planes run flat too

  static bool flat(const Conv2dGeometry& g) { return (g.wo < kFlatBelow || g.sw == 1) && g.sh == g.sw && g.ho > 0; }
  // The flat copy's row pitch: every valid output column's taps inside the row.
  static size_t flat_width(const Conv2dGeometry& g) {
    return std::max(g.pad_left + g.w, (g.wo - 1) * g.sw + (g.kw - 1) * g.dw + 1);
  }
  // Elements of the flat copy: the padded input rows, and what the last output's last tap reads
  // (all ho * wp outputs, the dropped columns included), plus the 32 a stride-2 vector load
  // reads past its first tap.
  static size_t flat_length(const Conv2dGeometry& g) {
    const size_t wp = flat_width(g);
    return std::max((g.kh - 1) * g.dh * wp + g.ho * wp * g.sw + (g.kw - 1) * g.dw, (g.pad_top + g.h) * wp) + 32;
  }

  // The h input rows of `src` into rows of `dst` of `wp` elements, x's zero point to their left
  // (pad_left) and right.
  void copy_padded_rows(const Conv2dGeometry& g, const uint16_t* src, size_t wp, uint16_t* dst) const {
    const auto pad = static_cast<uint16_t>(p_.x_zp);
    for (size_t r = 0; r < g.h; ++r, dst += wp) {
      std::fill(dst, dst + g.pad_left, pad);
      std::memcpy(dst + g.pad_left, src + r * g.w, g.w * sizeof(uint16_t));
      std::fill(dst + g.pad_left + g.w, dst + wp, pad);
    }
  }

  // Plane m (input plane `src`, output `y`) row by row over the column-padded copy `buf`.
  void row_plane(const Conv2dGeometry& g, const uint16_t* src, size_t m, uint16_t* buf, uint16_t* y) const {
    const size_t wp = padded_width(g);
    copy_padded_rows(g, src, wp, buf);
    Conv2dGeometry padded = g;  // the padded plane: columns shifted right by pad_left
    padded.w = wp;
    padded.pad_left = 0;
    const PlaneRowsOf<const uint16_t> xr{buf, 0, wp, 0};
    const PlaneRowsOf<uint16_t> yr{y, 0, g.wo, 0};
    qlinear_dwconv16_rows(padded, p_, bias_.data(), m, xr, yr, 0, g.ho);
  }

  // Plane m (input plane `src`, output `y`) through the flat copy `buf` (flat_length elements,
  // then ho * wp for the outputs before the dropped columns go).
  void flat_plane(const Conv2dGeometry& g, const uint16_t* src, size_t m, uint16_t* buf, uint16_t* y) const {
    const size_t wp = flat_width(g), len = flat_length(g);
    const auto pad = static_cast<uint16_t>(p_.x_zp);
    std::fill(buf, buf + g.pad_top * wp, pad);
    copy_padded_rows(g, src, wp, buf + g.pad_top * wp);
    std::fill(buf + (g.pad_top + g.h) * wp, buf + len, pad);
    Conv2dGeometry one = g;  // one row: tap row ky starts at the copy's row ky * dh
    one.h = g.kh * g.dh;
    one.w = len - (g.kh - 1) * g.dh * wp;
    one.ho = 1;
    one.wo = g.ho * wp;
    one.pad_top = one.pad_left = 0;
    one.sh = 1;
    const PlaneRowsOf<const uint16_t> xr{buf, 0, wp, 0};
    uint16_t* out = buf + len;
    const PlaneRowsOf<uint16_t> yr{out, 0, one.wo, 0};
    qlinear_dwconv16_rows(one, p_, bias_.data(), m, xr, yr, 0, 1);
    for (size_t oy = 0; oy < g.ho; ++oy) std::memcpy(y + oy * g.wo, out + oy * wp, g.wo * sizeof(uint16_t));
  }

  const ir::Node& node_;
  std::vector<int64_t> w_dims_;
  W8A16Params p_;
  std::vector<int64_t> bias_;
  Conv2dGeometryCache geo_;
};

}  // namespace

Result<std::unique_ptr<CpuOp>> make_qlinear_conv16(const ir::Node& node, const CompileContext& ctx) {
  auto none = [] { return std::unique_ptr<CpuOp>(); };
  if (ops::has_fused_epilogue(node)) return none();
  auto p = read_w8a16_params(node, 0);
  if (!p || p->w->rank() != 4) return none();
  const ir::Value* bv = node.input(8);
  const ir::Tensor* b = bv && bv->constant ? &*bv->constant : nullptr;
  const int64_t co = p->w->dim(0);
  if ((bv && !b) || (b && (b->dtype() != ir::DType::kI32 || b->numel() != co))) return none();
  const int64_t group = node.attrs.get_int("group", 1);
  if (group < 1 || co % group != 0) return none();
  // The GEMM's int64 -> f32 conversion is exact for K <= 2^26 (qs16_gemm.h).
  if (p->w->numel() / co > (int64_t{1} << 26)) return none();
  const int32_t* bias = b ? b->data<int32_t>() : nullptr;
  if (p->w->dim(1) == 1 && group > 1) return std::unique_ptr<CpuOp>(std::make_unique<QLinearDwConv16>(node, *p, bias));
  auto op = std::make_unique<QLinearConv16>(node, *p);
  if (!op->pack(bias, static_cast<size_t>(group), ctx.packs.get()))
    return out_of_memory(node.label() + ": packed weights");
  return std::unique_ptr<CpuOp>(std::move(op));
}

}  // namespace nfuse::backends::cpu
