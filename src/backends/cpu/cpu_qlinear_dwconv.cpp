// QLinearConv for depthwise convolutions (one input channel per group, any channel multiplier)
// on the cpu backend, bit-exact with the ref kernel (kernels/quant_arithmetic.h's requantize_value over
// the exact int32 sum, computed as the qu8 GEMM computes it). The GEMM path of
// cpu_qlinear_conv.cpp would run these as one N=1 GEMM per channel, padding every column panel
// to NR (16 or 32) and running ~30x slower than the f32 depthwise kernel.
//
// 3x3 kernels with strides 1 / 2 and dilation 1 (MobileNet's), where the CPU has AVX-512 VNNI +
// VBMI, run direct on the bytes (qu8_dwconv.h): the plane is copied into per-thread scratch with
// its padding written as the input zero point (once per worker and run: the copies leave it in
// place), the zero point is folded into the bias (bias - x_zp * sum(w)), and the kernel's int32
// sums are exact, requantized in-register as the qu8 GEMM does it.
//
// Other kernels of at most 514 taps run on the f32 depthwise kernels
// (f32_dwconv.h, AVX-512 / AVX2 FMA): the plane is converted to f32 (x - x_zp) in per-thread
// scratch (qu8_vcvt.h), the kernel sums w * (x - x_zp) with zero bias, and one pass adds the
// int32 bias and requantizes. Exact: every product is an integer of magnitude <= 255 * 128 and
// every partial sum of at most 514 of them stays below 2^24, so each f32 multiply, add or FMA is
// exact in any order, and the f32 result converts back to the same int32 sum ref computes.
//
// Larger kernels: per output row, 64 output pixels at a time, int32 accumulators on the stack
// start at the bias, each tap adds (x - x_zp) * w over the pixels whose tap lies inside the input
// row (a plain loop the compiler vectorises; taps in the padding add (x_zp - x_zp) * w = 0), then
// requantize.
// nfuse.QLinearConvRegion (cpu_conv_region_epilogue.h): the direct kernel writes f32(acc) * scale
// as floats (rq.f32_out), the f32 path takes its exact sums plus the bias times the scale, and
// the region finishes each plane; larger kernels go to the reference kernel.
// Threads split channel planes. No allocation while running.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>

#include "backends/cpu/cpu_conv_region_epilogue.h"
#include "backends/cpu/cpu_conv_util.h"
#include "backends/cpu/cpu_q8_dw_taps.h"
#include "kernels/f32-dwconv/f32_dwconv.h"
#include "kernels/qu8-dwconv/qu8_dwconv.h"
#include "kernels/qu8-gemm/qu8_wxgemm.h"
#include "kernels/qu8-vcvt/qu8_vcvt.h"

namespace nfuse::backends::cpu {
namespace {

constexpr size_t kChunk = 64;

// (x - x_zp) * w: |x - x_zp| <= 255 and |w| <= 128, so the product (<= 32640) is exact in int16,
// which SSE2's pmullw multiplies 8 at a time.
template <typename X>
inline int32_t product(X x, int16_t zp, int16_t w) {
  return static_cast<int16_t>(static_cast<int16_t>(static_cast<int16_t>(x) - zp) * w);
}

class QLinearDwConv final : public CpuOp {
 public:
  QLinearDwConv(const ir::Node& node, const ir::Tensor& w, const int32_t* bias, std::vector<float> mult, bool x_signed,
                int32_t x_zp, bool y_signed, int32_t y_zp, std::optional<ConvRegionEpilogue> region)
      : node_(node),
        w_dims_(w.dims()),
        mult_(std::move(mult)),
        x_signed_(x_signed),
        y_signed_(y_signed),
        x_zp_(x_zp),
        y_zp_(y_zp),
        region_(std::move(region)) {
    co_ = static_cast<size_t>(w.dim(0));
    taps_ = static_cast<size_t>(w.numel()) / co_;
    bias_.assign(co_, 0);
    if (bias) std::copy(bias, bias + co_, bias_.begin());
  }

  // The taps, and for 3x3 the direct kernel's columns (built once here, not per plane and run).
  bool pack(const ir::Tensor& w, PackStore* packs) {
    if (!w_.pack(*node_.input(3), w, packs)) return false;
    if (taps_ == 9) columns_ = w_.direct_columns(bias_.data(), x_zp_u8());
    return true;
  }

  size_t scratch_floats(const OpTensors& t, size_t) const override {
    if (taps_ > kMaxF32Taps) return 0;
    const std::optional<Conv2dGeometry> g = geo_.peek(node_.attrs, t.inputs[0]->dims(), w_dims_);
    if (!g) return 0;  // run() reports the error
    // Room for either path: which one runs depends on the ISA selected at run time.
    const size_t region = region_ ? ConvRegionEpilogue::kPiece + region_->work_floats() : 0;
    const size_t f32_path = plane_floats(g->h * g->w) + plane_floats(g->ho * g->wo) + region;
    if (!direct_ok(*g)) return f32_path;
    const size_t direct = direct_floats(*g) + (region_ ? plane_floats(g->ho * g->wo) + region_->work_floats() : 0);
    return std::max(f32_path, direct);
  }

  Status run(const OpTensors& t, RunContext& rc) override {
    NFUSE_ASSIGN_OR_RETURN(const Conv2dGeometry* g, geo_.get(node_.attrs, t.inputs[0]->dims(), w_dims_));
    if (g->m != co_ || g->c != g->group) return invalid_model(node_.label() + ": weights do not match the input");
    const void* x = t.inputs[0]->raw();
    void* y = t.outputs[0]->raw();
    const size_t planes = g->n * co_;
    const size_t per_task = items_per_task(planes, g->ho * g->wo, rc.pool.threads(), kMinTaskOutputs);
    if (taps_ <= kMaxF32Taps) {
      if (g != last_) {
        fn_ = kernels::f32_dwconv_select(kernels::selected_isa(), g->kh, g->kw, g->sh, g->sw, g->dh, g->dw);
        vcvt_ = kernels::qu8_vcvt_select(kernels::selected_isa());
        direct_ = direct_ok(*g) ? kernels::qu8_dwconv3x3_select(kernels::selected_isa()) : nullptr;
        rq_ = kernels::qu8_requant(y_signed_, y_zp_, y_signed_ ? -128 : 0, y_signed_ ? 127 : 255);
        last_ = g;
      }
      if (direct_) {
        // Scratch is shared with other ops: each worker writes its padding once per run.
        if (buffer_ready_.size() < rc.pool.threads()) buffer_ready_.resize(rc.pool.threads());
        std::fill(buffer_ready_.begin(), buffer_ready_.end(), 0);
        const DirectLayout dl = direct_layout(*g);
        run_items(rc.pool, planes, per_task, [&](size_t i, size_t worker) {
          auto* buf = reinterpret_cast<uint8_t*>(rc.scratch.get(worker));
          if (!buffer_ready_[worker]) std::fill(buf, buf + dl.bytes(), static_cast<uint8_t>(x_zp_u8()));
          buffer_ready_[worker] = 1;
          plane_direct(*g, dl, static_cast<const uint8_t*>(x), static_cast<uint8_t*>(y), i, buf);
        });
        return ok_status();
      }
      run_items(rc.pool, planes, per_task, [&](size_t i, size_t worker) {
        plane_f32(*g, static_cast<const uint8_t*>(x), static_cast<uint8_t*>(y), i, rc.scratch.get(worker));
      });
      return ok_status();
    }
    run_items(rc.pool, planes, per_task, [&](size_t i, size_t) {
      if (x_signed_) {
        y_signed_ ? plane<int8_t, int8_t>(*g, x, y, i) : plane<int8_t, uint8_t>(*g, x, y, i);
      } else {
        y_signed_ ? plane<uint8_t, int8_t>(*g, x, y, i) : plane<uint8_t, uint8_t>(*g, x, y, i);
      }
    });
    return ok_status();
  }

 private:
  // At most this many taps keep every partial sum of the f32 path below 2^24 (header comment).
  static constexpr size_t kMaxF32Taps = 514;

 public:
  static constexpr size_t max_f32_taps() { return kMaxF32Taps; }

 private:
  // The shapes the direct kernel takes (whether this CPU has it is qu8_dwconv3x3_select's part).
  static bool direct_ok(const Conv2dGeometry& g) {
    return g.kh == 3 && g.kw == 3 && g.dh == 1 && g.dw == 1 && (g.sh == 1 || g.sh == 2) && (g.sw == 1 || g.sw == 2);
  }
  // The direct path's padded u8 plane: the rows and columns the windows cover, each row as long
  // as the kernel reads (qu8_dwconv_row_bytes).
  struct DirectLayout {
    size_t rows = 0, cols = 0, stride = 0;
    size_t bytes() const { return rows * stride; }
  };
  static DirectLayout direct_layout(const Conv2dGeometry& g) {
    DirectLayout d;
    d.rows = (g.ho - 1) * g.sh + 3;
    d.cols = (g.wo - 1) * g.sw + 3;
    d.stride = std::max(d.cols, kernels::qu8_dwconv_row_bytes(g.wo, g.sw));
    return d;
  }
  // The direct path's padded plane in floats of scratch (the region's floats follow it).
  static size_t direct_floats(const Conv2dGeometry& g) {
    return plane_floats((direct_layout(g).bytes() + sizeof(float) - 1) / sizeof(float));
  }
  // The input zero point as the kernel reads bytes (s8: sign bit flipped).
  int32_t x_zp_u8() const { return x_zp_ + (x_signed_ ? 128 : 0); }

  // Output plane `index` = n * Co + o on the direct kernel: copies the input plane into buf at
  // (pad_top, pad_left) (s8 with its sign bit flipped); the rest of buf already holds x_zp.
  void plane_direct(const Conv2dGeometry& g, const DirectLayout& dl, const uint8_t* xv, uint8_t* yv, size_t index,
                    uint8_t* buf) const {
    const size_t n = index / co_, o = index % co_;
    const size_t c = o / (co_ / g.c);
    const uint8_t* x = xv + (n * g.c + c) * g.h * g.w;
    const size_t left = std::min(g.pad_left, dl.cols);
    const size_t copy = dl.cols > left ? std::min(g.w, dl.cols - left) : 0;
    const size_t r1 = std::min(dl.rows, g.pad_top + g.h);
    for (size_t r = std::min(g.pad_top, r1); r < r1; ++r) {
      const uint8_t* src = x + (r - g.pad_top) * g.w;
      uint8_t* dst = buf + r * dl.stride + left;
      if (x_signed_) {
        for (size_t j = 0; j < copy; ++j) dst[j] = static_cast<uint8_t>(src[j] ^ 0x80);
      } else {
        std::memcpy(dst, src, copy);
      }
    }
    kernels::Qu8DwconvParams p;
    p.in = buf;
    p.in_stride = dl.stride;
    for (size_t kx = 0; kx < 3; ++kx) p.w[kx] = columns_[o].w[kx];
    p.bias = columns_[o].bias;
    p.multiplier = mult_[o];
    p.rq = rq_;
    p.out = yv + index * g.ho * g.wo;
    p.out_stride = g.wo;
    p.out_width = g.wo;
    p.sh = g.sh;
    p.sw = g.sw;
    if (!region_) {
      direct_(p, 0, g.ho);
      return;
    }
    // f32(acc) * scale for the plane, then the region into the output plane.
    float* values = reinterpret_cast<float*>(buf) + direct_floats(g);
    p.rq.f32_out = true;
    p.out = reinterpret_cast<uint8_t*>(values);
    direct_(p, 0, g.ho);
    const size_t out_plane = g.ho * g.wo;
    region_->finish(values, out_plane, o, yv + index * out_plane, values + plane_floats(out_plane));
  }

  static size_t plane_floats(size_t n) { return (n + 15) / 16 * 16; }
  // Output plane `index` = n * Co + o on the f32 kernel: buf holds the input plane as f32
  // (x - x_zp), then the kernel's f32 sums.
  // s8 planes are read as their bits (the kernels flip the sign bit).
  void plane_f32(const Conv2dGeometry& g, const uint8_t* xv, uint8_t* yv, size_t index, float* buf) const {
    const size_t n = index / co_, o = index % co_;
    const size_t c = o / (co_ / g.c);
    const uint8_t* x = xv + (n * g.c + c) * g.h * g.w;
    uint8_t* y = yv + index * g.ho * g.wo;
    const size_t in_plane = g.h * g.w, out_plane = g.ho * g.wo;
    float* in = buf;
    float* sums = buf + plane_floats(in_plane);
    vcvt_.unpack(x, in_plane, x_signed_ ? 0x80 : 0, x_zp_ + (x_signed_ ? 128 : 0), in);
    kernels::F32DwconvParams p;
    p.in = in;
    p.in_stride = g.w;
    p.in_height = g.h;
    p.in_width = g.w;
    p.pad_top = g.pad_top;
    p.pad_left = g.pad_left;
    p.w = w_.f32(o);
    p.out = sums;
    p.out_stride = g.wo;
    p.out_width = g.wo;
    p.kh = g.kh, p.kw = g.kw, p.sh = g.sh, p.sw = g.sw, p.dh = g.dh, p.dw = g.dw;
    fn_(p, 0, g.ho);
    if (!region_) {
      vcvt_.requant(sums, out_plane, bias_[o], mult_[o], rq_, y);
      return;
    }
    // The sums are exact integers below 2^24: acc = sum + bias as ref has it, then f32(acc) * scale.
    float* piece = sums + plane_floats(out_plane);
    for (size_t q0 = 0; q0 < out_plane; q0 += ConvRegionEpilogue::kPiece) {
      const size_t len = std::min(ConvRegionEpilogue::kPiece, out_plane - q0);
      for (size_t q = 0; q < len; ++q)
        piece[q] = static_cast<float>(static_cast<int32_t>(sums[q0 + q]) + bias_[o]) * mult_[o];
      region_->finish(piece, len, o, y + q0, piece + ConvRegionEpilogue::kPiece);
    }
  }
  // Output plane `index` = n * Co + o, reading input channel o / (Co / C).
  template <typename X, typename Y>
  void plane(const Conv2dGeometry& g, const void* xv, void* yv, size_t index) const {
    const size_t n = index / co_, o = index % co_;
    const size_t c = o / (co_ / g.c);
    const X* x = static_cast<const X*>(xv) + (n * g.c + c) * g.h * g.w;
    Y* y = static_cast<Y*>(yv) + index * g.ho * g.wo;
    const int8_t* w = w_.s8(o);
    const int16_t zp = static_cast<int16_t>(x_zp_);
    // Requantization as the qu8 GEMM does it (qu8_gemm.h, "Exactness"): clamp in f32 to
    // [qmin - y_zp, qmax - y_zp], then round half to even by adding and subtracting 1.5 * 2^23
    // (exact for |v| <= 2^22; the clamp keeps |v| <= 510), then add y_zp: equal to ref's
    // saturate(round_half_even(f32(acc) * multiplier) + y_zp), and vectorisable.
    const float mult = mult_[o];
    const float lo = static_cast<float>((y_signed_ ? -128 : 0) - y_zp_);
    const float hi = static_cast<float>((y_signed_ ? 127 : 255) - y_zp_);
    constexpr float kRound = 12582912.0f;
    const ptrdiff_t wi = static_cast<ptrdiff_t>(g.w);
    int32_t acc[kChunk];
    for (size_t oy = 0; oy < g.ho; ++oy) {
      for (size_t ox0 = 0; ox0 < g.wo; ox0 += kChunk) {
        const size_t len = std::min(kChunk, g.wo - ox0);
        std::fill(acc, acc + len, bias_[o]);
        for (size_t ky = 0; ky < g.kh; ++ky) {
          const ptrdiff_t iy = static_cast<ptrdiff_t>(oy * g.sh + ky * g.dh) - static_cast<ptrdiff_t>(g.pad_top);
          if (iy < 0 || iy >= static_cast<ptrdiff_t>(g.h)) continue;  // padding: (x_zp - x_zp) * w = 0
          const X* row = x + static_cast<size_t>(iy) * g.w;
          for (size_t kx = 0; kx < g.kw; ++kx) {
            const int16_t wv = w[ky * g.kw + kx];
            const ptrdiff_t ix0 = static_cast<ptrdiff_t>(ox0 * g.sw + kx * g.dw) - static_cast<ptrdiff_t>(g.pad_left);
            // Pixels j in [j0, j1) read inside the row; the others read padding (contribute 0).
            const ptrdiff_t sw = static_cast<ptrdiff_t>(g.sw);
            const ptrdiff_t j0 = ix0 >= 0 ? 0 : (-ix0 + sw - 1) / sw;
            const ptrdiff_t j1 = std::min(static_cast<ptrdiff_t>(len), ix0 < wi ? (wi - 1 - ix0) / sw + 1 : 0);
            if (j1 <= j0) continue;
            const X* src = row + (ix0 + j0 * sw);
            int32_t* a = acc + j0;
            if (sw == 1) {
              for (ptrdiff_t j = 0; j < j1 - j0; ++j) a[j] += product(src[j], zp, wv);
            } else {
              for (ptrdiff_t j = 0; j < j1 - j0; ++j) a[j] += product(src[j * sw], zp, wv);
            }
          }
        }
        Y* yo = y + oy * g.wo + ox0;
        for (size_t j = 0; j < len; ++j) {
          const float v = std::min(std::max(static_cast<float>(acc[j]) * mult, lo), hi);
          yo[j] = static_cast<Y>(static_cast<int32_t>((v + kRound) - kRound) + y_zp_);
        }
      }
    }
  }

  const ir::Node& node_;
  std::vector<int64_t> w_dims_;
  std::vector<float> mult_;
  bool x_signed_, y_signed_;
  int32_t x_zp_, y_zp_;
  size_t co_ = 0, taps_ = 0;
  Q8DwTaps w_;
  std::vector<Q8DwTaps::DirectColumn> columns_;  // 3x3: the direct kernel's, per output channel
  kernels::F32DwconvFn fn_ = nullptr;
  kernels::Qu8VcvtKernels vcvt_{};
  kernels::Qu8GemmRequant rq_;
  const Conv2dGeometry* last_ = nullptr;  // the geometry fn_ was selected for
  kernels::Qu8DwconvFn direct_ = nullptr;  // the direct 3x3 kernel, where it applies and exists
  std::vector<uint8_t> buffer_ready_;      // per worker: its scratch holds the direct path's padding
  std::vector<int32_t> bias_;
  std::optional<ConvRegionEpilogue> region_;  // nfuse.QLinearConvRegion's float epilogue (mult_: its scales)
  Conv2dGeometryCache geo_;
};

}  // namespace

// Called by make_qlinear_conv (cpu_qlinear_conv.cpp) once it has validated the node: one input
// channel per group. The sum stays exact in int32 (the caller bounds |bias| + K * 255 * 128).
Result<std::unique_ptr<CpuOp>> make_qlinear_dwconv(const ir::Node& node, const ir::Tensor& w, const int32_t* bias,
                                                   std::vector<float> mult, bool x_signed, int32_t x_zp, bool y_signed,
                                                   int32_t y_zp, PackStore* packs,
                                                   std::optional<ConvRegionEpilogue> region) {
  const size_t taps = static_cast<size_t>(w.numel() / w.dim(0));
  if (region && taps > QLinearDwConv::max_f32_taps()) return std::unique_ptr<CpuOp>();  // ref runs it
  auto op = std::make_unique<QLinearDwConv>(node, w, bias, std::move(mult), x_signed, x_zp, y_signed, y_zp,
                                            std::move(region));
  if (!op->pack(w, packs)) return out_of_memory(node.label() + ": depthwise taps");
  return std::unique_ptr<CpuOp>(std::move(op));
}

}  // namespace nfuse::backends::cpu
