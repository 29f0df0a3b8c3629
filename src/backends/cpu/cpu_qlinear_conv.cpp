// QLinearConv on the cpu backend: 2-D NCHW, u8 or s8 activations, s8 weights with zero w_zp
// (per tensor or per output channel), int32 bias, any stride / pad / dilation / group, on the
// qu8 GEMM family (src/kernels/qu8-gemm/qu8_gemm.h). Bit-exact with the ref kernel: the GEMM
// computes exactly kernels/quant_arithmetic.h's requantize_value over the exact int32 accumulator.
//
// Orientation X * W (as cpu_conv_pixel_rows.cpp): output pixels are GEMM rows and output
// channels columns, because the kernel requantizes per column and the per-channel multipliers
// then live in packed B (weights, bias, x_zp correction and multipliers packed once here).
//   1x1, stride 1, no pad: A is the NCHW input itself (row stride 1, column stride H*W).
//   otherwise: the group's input is first transposed to NHWC ([H*W x C/group], cheap next to the
//   GEMM), then A is a u8 im2col matrix [pixels x K] built from one C/group-byte copy per tap
//   (K in (ky, kx, c) order, weights reordered to match at pack time; row-major, so the
//   driver's fast A packing applies), in op-owned buffers; padding taps hold x_zp, which
//   contributes zero. (A per-pixel gather from NCHW cost twice the GEMM itself.)
// C lands as [pixels x Co] in an op-owned buffer and one pass transposes it into NCHW (a byte
// copy: s8 and u8 alike). Grouped convolutions run one GEMM per group; depthwise ones (one input
// channel per group) go to the direct kernel of cpu_qlinear_dwconv.cpp instead.
//
// Where the W * X family has a kernel (qu8_wxgemm.h: AVX-512 VNNI, and the scalar ISA), the
// orientation flips instead (cpu_qconv_wx.h): output channels are rows, pixels columns, the
// multipliers per row, and neither transpose remains. (On the X * W path the transposes, the
// strided A packing of 1x1 layers and the per-pixel im2col cost about as much as the GEMM
// itself; W * X ran ResNet-50's convolutions ~1.7x faster, 1 thread.)
// nfuse.QLinearConvRegion runs on the same paths with a float epilogue (cpu_conv_region_epilogue.h):
// W * X packs the region's scales as the multipliers and writes each tile's float rows into the
// worker's scratch, where the region finishes them into the output rows; X * W keeps the int32
// accumulators [P x Co] and the transposing pass finishes each channel. Depthwise ones run on
// the f32 depthwise path of cpu_qlinear_dwconv.cpp with the region after the sums.
// Covered only with constant scales, zero points, weights and bias (what pack time needs);
// anything else returns nullptr and runs on the reference kernel.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "backends/cpu/cpu_conv_region_epilogue.h"
#include "backends/cpu/cpu_conv_util.h"
#include "backends/cpu/cpu_q8_im2col.h"
#include "backends/cpu/cpu_qconv_padded.h"
#include "backends/cpu/cpu_qconv_wx.h"
#include "backends/cpu/cpu_qlinear_conv_params.h"
#include "kernels/qu8-gemm/qu8_gemm.h"

namespace nfuse::backends::cpu {
namespace {

class QLinearConv final : public CpuOp {
 public:
  QLinearConv(const ir::Node& node, const ir::Tensor& w, bool x_signed, int32_t x_zp, bool y_signed, int32_t y_zp,
              std::optional<ConvRegionEpilogue> region)
      : node_(node),
        w_dims_(w.dims()),
        cfg_(kernels::qu8_gemm_config()),
        x_signed_(x_signed),
        y_signed_(y_signed),
        x_zp_(x_zp),
        y_zp_(y_zp),
        region_(std::move(region)) {
    co_ = static_cast<size_t>(w.dim(0));
    k_ = static_cast<size_t>(w.numel()) / co_;
  }

  // Weights [Co][K] per group are B (K x Co/group), packed with bias, x_zp correction and the
  // multipliers (x_scale * w_scale[c]) / y_scale (with a region: its scales x_scale * w_scale[c]).
  // Through `packs` (a context binary's store, or the recording one of `nfuse compile`): the key
  // names the weight, the kernel configuration and everything else baked into the panels (x's
  // zero point and signedness, the group, the bias and multiplier values).
  bool pack(const ir::Tensor& w, const int32_t* bias, const std::vector<float>& mult, size_t group, PackStore* packs) {
    group_ = group;
    const size_t cg = co_ / group;
    const uint64_t baked = qconv_values_hash(bias, mult, co_);
    if (const kernels::Qu8WxConfig* wx = QConvWx::config()) {  // W * X: weights [Co][K] as they are
      wx_ = std::make_unique<QConvWx>(*wx, co_, k_, group);
      if (quads_apply(group)) wx_->use_channel_quads(static_cast<size_t>(w_dims_[2] * w_dims_[3]));
      if (region_) zero_bias_.assign(co_ + wx->mr, 0.0f);
      const std::string family = std::string("q8.conv.wx.") + wx->name + (wx_->quads() ? ".quads" : "");
      auto key = [&] {
        return pack_key(family.c_str(), *node_.input(3),
                        {co_, k_, group, static_cast<uint64_t>(x_zp_), x_signed_ ? 1u : 0u, baked});
      };
      return wx_->pack(w.data<int8_t>(), bias, mult.data(), x_zp_, x_signed_, packs, node_.input(3), key);
    }
    panel_bytes_ = kernels::qu8_gemm_packed_b_size(cfg_, k_, cg);
    const size_t floats = (panel_bytes_ * group + sizeof(float) - 1) / sizeof(float);
    const std::string family = std::string("q8.conv.gemm.") + cfg_.name;
    auto key = [&] {
      return pack_key(family.c_str(), *node_.input(3),
                      {co_, k_, group, static_cast<uint64_t>(x_zp_), x_signed_ ? 1u : 0u, baked});
    };
    return pack_weights(packs, *node_.input(3), key, floats, &packed_, [&](float* dst) {
      // K in (ky, kx, c) order, the order of the NHWC im2col rows (for 1x1 the same as ONNX's).
      const size_t cin_g = static_cast<size_t>(w_dims_[1]);
      std::vector<int8_t> wr(static_cast<size_t>(w.numel()));
      q8_weights_to_tap_major(w.data<int8_t>(), co_, cin_g, k_ / cin_g, wr.data());
      for (size_t g = 0; g < group; ++g) {
        kernels::qu8_gemm_pack_b(cfg_, k_, cg, wr.data() + g * cg * k_, 1, k_, bias ? bias + g * cg : nullptr,
                                 mult.data() + g * cg, x_zp_, x_signed_,
                                 reinterpret_cast<uint8_t*>(dst) + g * panel_bytes_);
      }
    });
  }

  size_t scratch_floats(const OpTensors& t, size_t) const override {
    if (wx_ != nullptr) {
      const std::optional<Conv2dGeometry> g = geo_.peek(node_.attrs, t.inputs[0]->dims(), w_dims_);
      if (!g) return 0;  // run() reports the error
      return wx_->scratch_floats(*g, region_ ? &*region_ : nullptr);
    }
    const size_t gemm = (kernels::qu8_gemm_workspace_size(cfg_, k_) + sizeof(float) - 1) / sizeof(float);
    return std::max(gemm, region_ ? kPieceFloats + region_->work_floats() : 0);
  }

  Status run(const OpTensors& t, RunContext& rc) override {
    NFUSE_ASSIGN_OR_RETURN(const Conv2dGeometry* g, geo_.get(node_.attrs, t.inputs[0]->dims(), w_dims_));
    if (g->group != group_ || g->m != co_) return invalid_model(node_.label() + ": weights do not match the input");
    const size_t p = g->ho * g->wo;
    const size_t hw = g->h * g->w;
    const size_t cin_g = g->c / g->group, cg = co_ / g->group;
    const bool direct = is_pointwise_unpadded(*g);
    if (wx_ != nullptr && region_) {
      kernels::Qu8GemmRequant rq;
      rq.f32_out = true;
      rq.lo = -std::numeric_limits<float>::infinity();
      rq.hi = std::numeric_limits<float>::infinity();
      return wx_->run(*g, static_cast<const uint8_t*>(t.inputs[0]->raw()), x_zp_, x_signed_, t.outputs[0]->raw(), rq,
                      {zero_bias_.data(), nullptr}, rc, node_.label(), &*region_);
    }
    if (wx_ != nullptr) {
      return wx_->run(*g, static_cast<const uint8_t*>(t.inputs[0]->raw()), x_zp_, x_signed_, t.outputs[0]->raw(),
                      kernels::qu8_requant(y_signed_, y_zp_, y_signed_ ? -128 : 0, y_signed_ ? 127 : 255), {}, rc,
                      node_.label());
    }
    const size_t c_elem = region_ ? sizeof(int32_t) : 1;
    if (!direct && (cols_.size() < p * k_ || nhwc_.size() < hw * cin_g)) {
      cols_.resize(std::max(cols_.size(), p * k_));
      nhwc_.resize(std::max(nhwc_.size(), hw * cin_g));
    }
    if (product_.size() < p * co_ * c_elem) product_.resize(p * co_ * c_elem);
    const size_t threads = rc.pool.threads();
    const uint8_t* x_all = static_cast<const uint8_t*>(t.inputs[0]->raw());
    uint8_t* y_all = static_cast<uint8_t*>(t.outputs[0]->raw());
    for (size_t n = 0; n < g->n; ++n) {
      for (size_t gi = 0; gi < g->group; ++gi) {
        const uint8_t* x = x_all + (n * g->c + gi * cin_g) * hw;
        kernels::Qu8GemmArgs args;
        args.m = p, args.n = cg, args.k = k_;
        if (direct) {
          args.a = x, args.a_row_stride = 1, args.a_col_stride = hw;
        } else {
          const size_t sstep = std::max<size_t>(1, (hw + threads * 4 - 1) / (threads * 4));
          rc.pool.run((hw + sstep - 1) / sstep, [&](size_t i, size_t) {
            q8_to_nhwc(x, hw, cin_g, i * sstep, std::min(hw, (i + 1) * sstep), nhwc_.data());
          });
          const size_t pstep = std::max<size_t>(1, (p + threads * 4 - 1) / (threads * 4));
          rc.pool.run((p + pstep - 1) / pstep, [&](size_t i, size_t) {
            q8_im2col(*g, nhwc_.data(), static_cast<uint8_t>(x_zp_), i * pstep, std::min(p, (i + 1) * pstep),
                      cols_.data());
          });
          args.a = cols_.data(), args.a_row_stride = k_, args.a_col_stride = 1;
        }
        args.a_signed = x_signed_;
        args.b_packed = reinterpret_cast<const uint8_t*>(packed_.data()) + gi * panel_bytes_;
        args.c = product_.data() + gi * cg * c_elem, args.c_stride = co_;
        args.int32_out = region_.has_value();
        args.c_signed = y_signed_;
        args.c_zero_point = y_zp_;
        args.qmin = y_signed_ ? -128 : 0;
        args.qmax = y_signed_ ? 127 : 255;
        const kernels::Qu8GemmTasks tasks = kernels::qu8_gemm_tasks(cfg_, p, cg, k_, threads);
        rc.pool.run(tasks.count(), [&](size_t i, size_t worker) {
          kernels::qu8_gemm_task(cfg_, args, tasks, i, rc.scratch.get(worker));
        });
      }
      // [P x Co] -> NCHW.
      uint8_t* y = y_all + n * co_ * p;
      const size_t cstep = std::max<size_t>(1, (co_ + threads * 4 - 1) / (threads * 4));
      if (region_) {  // int32 accumulators: each channel scaled to float in pieces, then the region
        rc.pool.run((co_ + cstep - 1) / cstep, [&](size_t i, size_t worker) {
          float* piece = rc.scratch.get(worker);
          const auto* acc = reinterpret_cast<const int32_t*>(product_.data());
          for (size_t o = i * cstep; o < std::min(co_, (i + 1) * cstep); ++o) {
            const float scale = region_->scales()[o];
            for (size_t q0 = 0; q0 < p; q0 += kPieceFloats) {
              const size_t len = std::min(kPieceFloats, p - q0);
              for (size_t q = 0; q < len; ++q) piece[q] = static_cast<float>(acc[(q0 + q) * co_ + o]) * scale;
              region_->finish(piece, len, o, y + o * p + q0, piece + kPieceFloats);
            }
          }
        });
        continue;
      }
      rc.pool.run((co_ + cstep - 1) / cstep, [&](size_t i, size_t) {
        for (size_t o = i * cstep; o < std::min(co_, (i + 1) * cstep); ++o) {
          uint8_t* yo = y + o * p;
          const uint8_t* src = product_.data() + o;
          for (size_t q = 0; q < p; ++q) yo[q] = src[q * co_];
        }
      });
    }
    return ok_status();
  }

 private:
  const ir::Node& node_;
  // Whether the W * X path runs this convolution on channel quads: QConvPaddedRows::quads_apply
  // on what the attributes and weights fix (the input's size does not enter).
  bool quads_apply(size_t group) const {
    if (w_dims_.size() != 4) return false;
    const std::vector<int64_t> strides = node_.attrs.get_ints("strides", {1, 1});
    Conv2dGeometry g;
    g.group = group;
    g.c = static_cast<size_t>(w_dims_[1]) * group;
    g.kh = static_cast<size_t>(w_dims_[2]);
    g.kw = static_cast<size_t>(w_dims_[3]);
    g.sw = strides.size() == 2 ? static_cast<size_t>(strides[1]) : 1;
    return QConvPaddedRows::quads_apply(g);
  }

  std::vector<int64_t> w_dims_;
  const kernels::Qu8GemmConfig& cfg_;
  std::unique_ptr<QConvWx> wx_;  // the W * X path, or nullptr: X * W on cfg_
  bool x_signed_, y_signed_;
  int32_t x_zp_, y_zp_;
  size_t co_ = 0, k_ = 0, group_ = 1, panel_bytes_ = 0;
  // X * W with a region: the accumulators of this many pixels of one channel, as floats.
  static constexpr size_t kPieceFloats = ConvRegionEpilogue::kPiece;
  std::optional<ConvRegionEpilogue> region_;  // nfuse.QLinearConvRegion's float epilogue
  std::vector<float> zero_bias_;              // W * X with a region: the f32 epilogue's row bias
  PackedFloats packed_;
  std::vector<uint8_t> nhwc_, cols_, product_;  // grow only: sized by the largest input seen
  Conv2dGeometryCache geo_;
};

}  // namespace

Result<std::unique_ptr<CpuOp>> make_qlinear_dwconv(const ir::Node& node, const ir::Tensor& w, const int32_t* bias,
                                                   std::vector<float> mult, bool x_signed, int32_t x_zp, bool y_signed,
                                                   int32_t y_zp, PackStore* packs,
                                                   std::optional<ConvRegionEpilogue> region);

namespace {

// QLinearConv, or with `region` nfuse.QLinearConvRegion (the multipliers then its scales).
Result<std::unique_ptr<CpuOp>> make_conv(const ir::Node& node, const CompileContext& ctx, bool with_region) {
  if (!node.input(0)) return std::unique_ptr<CpuOp>();
  QConvParams q;
  if (!read_qconv_params(node, node.input(0)->type.dtype, &q).empty()) return std::unique_ptr<CpuOp>();
  std::optional<ConvRegionEpilogue> region;
  if (with_region) {
    auto r = ConvRegionEpilogue::read(node, q.m);
    if (!r.ok()) return std::unique_ptr<CpuOp>();  // ref runs it, and reports what is wrong
    for (float s : r->scales())
      if (!(s > 0.0f) || !std::isfinite(s)) return std::unique_ptr<CpuOp>();
    q.mult = r->scales();
    region = std::move(*r);
  }
  const ir::Tensor& w = *node.input(3)->constant;
  if (w.dim(1) == 1 && q.group > 1) {  // depthwise: the direct kernel (cpu_qlinear_dwconv.cpp)
    return make_qlinear_dwconv(node, w, q.bias.data(), std::move(q.mult), q.x_signed, q.x_zp, q.y_signed, q.y_zp,
                               ctx.packs.get(), std::move(region));
  }
  auto op = std::make_unique<QLinearConv>(node, w, q.x_signed, q.x_zp, q.y_signed, q.y_zp, std::move(region));
  if (!op->pack(w, q.bias.data(), q.mult, static_cast<size_t>(q.group), ctx.packs.get())) {
    return out_of_memory(node.label() + ": packed weights");
  }
  return std::unique_ptr<CpuOp>(std::move(op));
}

}  // namespace

Result<std::unique_ptr<CpuOp>> make_qlinear_conv(const ir::Node& node, const CompileContext& ctx) {
  return make_conv(node, ctx, false);
}

Result<std::unique_ptr<CpuOp>> make_qlinear_conv_region(const ir::Node& node, const CompileContext& ctx) {
  return make_conv(node, ctx, true);
}

}  // namespace nfuse::backends::cpu
