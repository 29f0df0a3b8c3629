// QLinearConv on the cpu backend: 2-D NCHW, u8 or s8 activations, s8 weights with zero w_zp
// (per tensor or per output channel), int32 bias, any stride / pad / dilation / group, on the
// qu8 GEMM family (src/kernels/qu8-gemm/qu8_gemm.h). Bit-exact with the ref kernel: the GEMM
// computes exactly ref_quant_util.h's requantize_value over the exact int32 accumulator.
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
// orientation flips instead: output channels are rows, pixels columns, the multipliers per row.
// B is then [K x pixels] with K in ONNX's (c, ky, kx) order (the weights need no reordering): the
// NCHW input rows themselves for a 1x1 stride-1 unpadded convolution, else im2col columns
// gathered straight into the GEMM's packed X panels (qu8_wxgemm_pack_x_runs) from a copy of the
// group's planes padded with x_zp and split into stride phases (pad_planes), where each
// (c, ky, kx) and output row is one contiguous run (16-byte loads, no edge tests; no im2col
// matrix in between, which cost about as much as the packing). C rows are the NCHW output rows:
// neither transpose remains.
// Tasks split pixels first, so each builds and packs only its own columns. (On the X * W path
// the transposes, the strided A packing of 1x1 layers and the per-pixel im2col cost about as
// much as the GEMM itself; W * X ran ResNet-50's convolutions ~1.7x faster, 1 thread.)
// Covered only with constant scales, zero points, weights and bias (what pack time needs);
// anything else returns nullptr and runs on the reference kernel.
#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>  // SSE2 (baseline x86-64): pad_planes' copies and stride-2 column split
#endif

#include "backends/cpu/cpu_conv_util.h"
#include "backends/cpu/cpu_qlinear_conv_params.h"
#include "kernels/qu8-gemm/qu8_gemm.h"
#include "kernels/qu8-gemm/qu8_wxgemm.h"

namespace nfuse::backends::cpu {
namespace {

// memcpy / memset for the short rows of pad_planes (56, 28, 14 or 7 bytes for ResNet-50's maps,
// 1-byte pads), inline: ~95k rows per ResNet-50 run, where the library calls cost more than the
// copies. Exact: chunks end on an overlapping last chunk, never past n.
inline void copy_short(uint8_t* dst, const uint8_t* src, size_t n) {
#if defined(__x86_64__)
  if (n >= 16) {
    for (size_t i = 0; i + 16 < n; i += 16)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + n - 16),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + n - 16)));
    return;
  }
#endif
  if (n >= 8) {
    uint64_t a, b;
    std::memcpy(&a, src, 8);
    std::memcpy(&b, src + n - 8, 8);
    std::memcpy(dst, &a, 8);
    std::memcpy(dst + n - 8, &b, 8);
    return;
  }
  if (n >= 4) {
    uint32_t a, b;
    std::memcpy(&a, src, 4);
    std::memcpy(&b, src + n - 4, 4);
    std::memcpy(dst, &a, 4);
    std::memcpy(dst + n - 4, &b, 4);
    return;
  }
  if (n > 0) dst[0] = src[0];  // not a loop: GCC would make it a memcpy call again
  if (n > 1) dst[1] = src[1];
  if (n > 2) dst[2] = src[2];
}

inline void fill_short(uint8_t* dst, uint8_t v, size_t n) {
#if defined(__x86_64__)
  if (n >= 16) {
    const __m128i b = _mm_set1_epi8(static_cast<char>(v));
    for (size_t i = 0; i + 16 < n; i += 16) _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), b);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + n - 16), b);
    return;
  }
#endif
  if (n >= 8) {
    const uint64_t b = 0x0101010101010101ull * v;
    std::memcpy(dst, &b, 8);
    std::memcpy(dst + n - 8, &b, 8);
    return;
  }
  if (n >= 4) {
    const uint32_t b = 0x01010101u * v;
    std::memcpy(dst, &b, 4);
    std::memcpy(dst + n - 4, &b, 4);
    return;
  }
  if (n > 0) dst[0] = v;  // not a loop: GCC would make it a memset call again
  if (n > 1) dst[1] = v;
  if (n > 2) dst[2] = v;
}

class QLinearConv final : public CpuOp {
 public:
  QLinearConv(const ir::Node& node, const ir::Tensor& w, bool x_signed, int32_t x_zp, bool y_signed, int32_t y_zp)
      : node_(node),
        w_dims_(w.dims()),
        cfg_(kernels::qu8_gemm_config()),
        wx_(kernels::qu8_wxgemm_config(kernels::selected_isa())),
        x_signed_(x_signed),
        y_signed_(y_signed),
        x_zp_(x_zp),
        y_zp_(y_zp) {
    co_ = static_cast<size_t>(w.dim(0));
    k_ = static_cast<size_t>(w.numel()) / co_;
    // W * X pixel block: its packed X (kpad x block bytes) about 160 KiB.
    const size_t kpad = (k_ + 3) / 4 * 4;
    if (wx_ != nullptr && wx_->nr > kMaxWxNr) wx_ = nullptr;  // pack_panel's run table
    wx_block_ = std::min<size_t>(kMaxWxBlock, std::max<size_t>(32, kWxBlockBytes / kpad / 32 * 32));
  }

  // Weights [Co][K] per group are B (K x Co/group), packed with bias, x_zp correction and the
  // multipliers (x_scale * w_scale[c]) / y_scale.
  bool pack(const ir::Tensor& w, const int32_t* bias, const std::vector<float>& mult, size_t group) {
    group_ = group;
    const size_t cg = co_ / group;
    if (wx_ != nullptr) {  // W * X: weights [Co][K] as they are, K in (c, ky, kx) order
      panel_bytes_ = kernels::qu8_wxgemm_packed_w_size(*wx_, cg, k_);
      if (!packed_.resize((panel_bytes_ * group + sizeof(float) - 1) / sizeof(float))) return false;
      for (size_t g = 0; g < group; ++g) {
        kernels::qu8_wxgemm_pack_w(*wx_, cg, k_, w.data<int8_t>() + g * cg * k_, bias ? bias + g * cg : nullptr,
                                   mult.data() + g * cg, x_zp_, x_signed_,
                                   reinterpret_cast<uint8_t*>(packed_.data()) + g * panel_bytes_);
      }
      return true;
    }
    panel_bytes_ = kernels::qu8_gemm_packed_b_size(cfg_, k_, cg);
    const size_t floats = (panel_bytes_ * group + sizeof(float) - 1) / sizeof(float);
    if (!packed_.resize(floats)) return false;
    // K in (ky, kx, c) order, the order of the NHWC im2col rows (for 1x1 the same as ONNX's).
    const size_t cin_g = static_cast<size_t>(w_dims_[1]), taps = k_ / cin_g;
    std::vector<int8_t> wr(static_cast<size_t>(w.numel()));
    for (size_t o = 0; o < co_; ++o)
      for (size_t c = 0; c < cin_g; ++c)
        for (size_t t = 0; t < taps; ++t) wr[o * k_ + t * cin_g + c] = w.data<int8_t>()[o * k_ + c * taps + t];
    for (size_t g = 0; g < group; ++g) {
      kernels::qu8_gemm_pack_b(cfg_, k_, cg, wr.data() + g * cg * k_, 1, k_, bias ? bias + g * cg : nullptr,
                               mult.data() + g * cg, x_zp_, x_signed_,
                               reinterpret_cast<uint8_t*>(packed_.data()) + g * panel_bytes_);
    }
    return true;
  }

  size_t scratch_floats(const OpTensors& t, size_t) const override {
    if (wx_ != nullptr) {
      const Conv2dGeometry* g = geo_.cached(t.inputs[0]->dims());
      Conv2dGeometryCache tmp;
      if (!g) {
        auto r = tmp.get(node_.attrs, t.inputs[0]->dims(), w_dims_);
        if (!r.ok()) return 0;  // run() reports the error
        g = *r;
      }
      return (wx_packed_bytes() + wx_padded_bytes(*g) + sizeof(float) - 1) / sizeof(float);
    }
    return (kernels::qu8_gemm_workspace_size(cfg_, k_) + sizeof(float) - 1) / sizeof(float);
  }

  Status run(const OpTensors& t, RunContext& rc) override {
    NFUSE_ASSIGN_OR_RETURN(const Conv2dGeometry* g, geo_.get(node_.attrs, t.inputs[0]->dims(), w_dims_));
    if (g->group != group_ || g->m != co_) return invalid_model(node_.label() + ": weights do not match the input");
    const size_t p = g->ho * g->wo;
    const size_t hw = g->h * g->w;
    const size_t cin_g = g->c / g->group, cg = co_ / g->group;
    const bool direct = is_direct(*g);
    if (wx_ != nullptr) return run_wx(*g, direct, t, rc);
    if (!direct && (cols_.size() < p * k_ || nhwc_.size() < hw * cin_g)) {
      cols_.resize(std::max(cols_.size(), p * k_));
      nhwc_.resize(std::max(nhwc_.size(), hw * cin_g));
    }
    if (product_.size() < p * co_) product_.resize(p * co_);
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
            to_nhwc(x, hw, cin_g, i * sstep, std::min(hw, (i + 1) * sstep));
          });
          const size_t pstep = std::max<size_t>(1, (p + threads * 4 - 1) / (threads * 4));
          rc.pool.run((p + pstep - 1) / pstep, [&](size_t i, size_t) {
            im2col(*g, i * pstep, std::min(p, (i + 1) * pstep));
          });
          args.a = cols_.data(), args.a_row_stride = k_, args.a_col_stride = 1;
        }
        args.a_signed = x_signed_;
        args.b_packed = reinterpret_cast<const uint8_t*>(packed_.data()) + gi * panel_bytes_;
        args.c = product_.data() + gi * cg, args.c_stride = co_;
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
  // A 1x1 stride-1 unpadded convolution: X is the NCHW input itself.
  static bool is_direct(const Conv2dGeometry& g) {
    return g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.pad_top == 0 && g.pad_left == 0 && g.ho == g.h &&
           g.wo == g.w;
  }

  // W * X scratch: each worker's packed X block, then (worker 0's only, read by all) the padded
  // planes. In the partition's scratch rather than op-owned, because one buffer shared by every
  // convolution stays in cache from one to the next, where ResNet-50's 53 op-owned copies each
  // came cold (median 13.6 -> 13.1 ms, 1 thread, noisy machine). Every worker's scratch is sized
  // for both parts (the Scratch API sizes all alike): the others' padded part goes unused.
  size_t wx_packed_bytes() const { return ((k_ + 3) / 4 * 4 * wx_block_ + 63) / 64 * 64; }
  static size_t wx_padded_bytes(const Conv2dGeometry& g) {
    if (is_direct(g) || g.ho == 0 || g.wo == 0) return 0;
    return g.c / g.group * pad_geometry(g).plane + 64;  // + 64: pack_panel's load overshoot
  }

  // The W * X orientation (header comment): per image and group, tasks of [pixels x channels].
  Status run_wx(const Conv2dGeometry& g, bool direct, const OpTensors& t, RunContext& rc) {
    const size_t p = g.ho * g.wo, hw = g.h * g.w;
    const size_t cin_g = g.c / g.group, cg = co_ / g.group;
    if (p == 0 || g.n == 0) return ok_status();  // empty output (pad_geometry needs ho, wo >= 1)
    if (!direct) {
      const PadGeometry pg = pad_geometry(g);
      if (rc.scratch.floats() * sizeof(float) < wx_packed_bytes() + wx_padded_bytes(g))
        return internal_error(node_.label() + ": scratch too small");
      padded_ = reinterpret_cast<uint8_t*>(rc.scratch.get(0)) + wx_packed_bytes();
      // Where each K row (c, ky, kx) starts in padded_ (tap (0, 0) of output pixel 0 at 0).
      const size_t row_bytes = g.sw * pg.cols;
      row_offset_.resize(k_);
      size_t* o = row_offset_.data();
      for (size_t c = 0; c < cin_g; ++c)
        for (size_t ky = 0; ky < g.kh; ++ky)
          for (size_t kx = 0; kx < g.kw; ++kx)
            *o++ = c * pg.plane + ky * g.dh * row_bytes + (kx * g.dw % g.sw) * pg.cols + kx * g.dw / g.sw;
    }
    const kernels::Qu8GemmRequant rq =
        kernels::qu8_requant(y_signed_, y_zp_, y_signed_ ? -128 : 0, y_signed_ ? 127 : 255);
    const uint8_t* x_all = static_cast<const uint8_t*>(t.inputs[0]->raw());
    uint8_t* y_all = static_cast<uint8_t*>(t.outputs[0]->raw());
    const kernels::GemmTasks tasks = kernels::gemm_tasks(wx_->nr, wx_->mr, p, cg, k_, rc.pool.threads());
    for (size_t n = 0; n < g.n; ++n) {
      for (size_t gi = 0; gi < g.group; ++gi) {
        const uint8_t* x = x_all + (n * g.c + gi * cin_g) * hw;
        uint8_t* y = y_all + (n * co_ + gi * cg) * p;
        const uint8_t* w = reinterpret_cast<const uint8_t*>(packed_.data()) + gi * panel_bytes_;
        if (!direct) {
          const size_t cstep = std::max<size_t>(1, (cin_g + rc.pool.threads() * 4 - 1) / (rc.pool.threads() * 4));
          rc.pool.run((cin_g + cstep - 1) / cstep, [&](size_t i, size_t) {
            pad_planes(g, x, i * cstep, std::min(cin_g, (i + 1) * cstep));
          });
        }
        rc.pool.run(tasks.count(), [&](size_t i, size_t worker) {
          size_t p0, p1, c0, c1;
          tasks.range(i, p, cg, &p0, &p1, &c0, &c1);
          wx_task(g, direct, x, w, y, p0, p1, c0, c1, rq, rc.scratch.get(worker));
        });
      }
    }
    return ok_status();
  }

  // Output pixels [p0, p1) x channels [c0, c1) of one image and group, block by block of pixels.
  void wx_task(const Conv2dGeometry& g, bool direct, const uint8_t* x, const uint8_t* w, uint8_t* y, size_t p0,
               size_t p1, size_t c0, size_t c1, const kernels::Qu8GemmRequant& rq, float* scratch) const {
    const size_t p = g.ho * g.wo, hw = g.h * g.w;
    const size_t mr = wx_->mr, nr = wx_->nr, kpad = (k_ + 3) / 4 * 4;
    const size_t w_panel = kernels::qu8_wxgemm_packed_w_size(*wx_, mr, k_);
    uint8_t* packed_x = reinterpret_cast<uint8_t*>(scratch);
    for (size_t pb = p0; pb < p1; pb += wx_block_) {
      const size_t len = std::min(wx_block_, p1 - pb);
      for (size_t j = 0; j < len; j += nr) {
        if (direct) {
          kernels::qu8_wxgemm_pack_x(*wx_, k_, std::min(nr, len - j), x + pb + j, hw, x_signed_, packed_x + j * kpad);
        } else {
          pack_panel(g, pb + j, std::min(nr, len - j), packed_x + j * kpad);
        }
      }
      for (size_t c = c0; c < c1; c += mr) {
        const uint8_t* wp = w + c / mr * w_panel;
        for (size_t j = 0; j < len; j += nr) {
          wx_->ukernel(std::min(mr, c1 - c), std::min(nr, len - j), kpad, wp, packed_x + j * kpad,
                       y + c * p + pb + j, p, rq);
        }
      }
    }
  }

  // The group's input planes, padded with x_zp's byte and split into sw column phases, so that
  // every im2col row segment is one contiguous run: phase ph, row r, column j holds padded input
  // (r - pad_top, j * sw + ph - pad_left). Rows: every row a window reads; columns: wo plus the
  // window's reach in that phase.
  struct PadGeometry {
    size_t rows, cols, plane;  // plane = rows * sw * cols
  };
  static PadGeometry pad_geometry(const Conv2dGeometry& g) {
    PadGeometry pg;
    pg.rows = (g.ho - 1) * g.sh + (g.kh - 1) * g.dh + 1;
    pg.cols = g.wo + (g.kw - 1) * g.dw / g.sw;
    pg.plane = pg.rows * g.sw * pg.cols;
    return pg;
  }

  // Whether some tap reads column phase `ph` (kx * dw % sw == ph for some kx).
  static bool phase_read(const Conv2dGeometry& g, size_t ph) {
    for (size_t kx = 0; kx < g.kw; ++kx)
      if (kx * g.dw % g.sw == ph) return true;
    return false;
  }

  // Whether some tap reads padded row r (r = oy * sh + ky * dh for some ky; e.g. not the odd rows
  // of a 1x1 stride 2, half of a ResNet downsample's copy).
  static bool row_read(const Conv2dGeometry& g, size_t r) {
    for (size_t ky = 0; ky < g.kh && ky * g.dh <= r; ++ky)
      if ((r - ky * g.dh) % g.sh == 0) return true;
    return false;
  }

  // Input channels [c0, c1) of the group (planes at x) into padded_ (phases and rows no tap reads
  // are left as they are).
  void pad_planes(const Conv2dGeometry& g, const uint8_t* x, size_t c0, size_t c1) {
    const PadGeometry pg = pad_geometry(g);
    const uint8_t pad = static_cast<uint8_t>(x_zp_);
    const ptrdiff_t wi = static_cast<ptrdiff_t>(g.w), sw = static_cast<ptrdiff_t>(g.sw);
    const ptrdiff_t n = static_cast<ptrdiff_t>(pg.cols);
    // Per phase (the same for every row): whether a tap reads it, and the columns j in [j0, j1)
    // that read input ix = j * sw + ph - pad_left inside the row.
    struct Phase {
      bool read;
      ptrdiff_t ix0, j0, j1;
    };
    auto make_phase = [&](ptrdiff_t ph) {
      Phase f;
      f.read = phase_read(g, static_cast<size_t>(ph));
      f.ix0 = ph - static_cast<ptrdiff_t>(g.pad_left);
      f.j0 = std::min(n, f.ix0 >= 0 ? 0 : (-f.ix0 + sw - 1) / sw);
      f.j1 = std::max(f.j0, std::min(n, f.ix0 < wi ? (wi - 1 - f.ix0) / sw + 1 : 0));
      return f;
    };
    constexpr ptrdiff_t kTable = static_cast<ptrdiff_t>(kMaxPhases);  // larger strides: per row
    Phase phases[kMaxPhases];
    for (ptrdiff_t ph = 0; ph < std::min(sw, kTable); ++ph) phases[ph] = make_phase(ph);
    if (sw == 1) {  // one phase, read by every tap: the loop below without its per-phase work
      const ptrdiff_t ix0 = phases[0].ix0, j0 = phases[0].j0, j1 = phases[0].j1;
      for (size_t c = c0; c < c1; ++c) {
        const uint8_t* plane = x + c * g.h * g.w;
        uint8_t* dst = padded_ + c * pg.plane;
        for (size_t r = 0; r < pg.rows; ++r, dst += pg.cols) {
          if (g.sh > 1 && !row_read(g, r)) continue;
          const ptrdiff_t iy = static_cast<ptrdiff_t>(r) - static_cast<ptrdiff_t>(g.pad_top);
          if (iy < 0 || iy >= static_cast<ptrdiff_t>(g.h)) {
            fill_short(dst, pad, pg.cols);
            continue;
          }
          fill_short(dst, pad, static_cast<size_t>(j0));
          copy_short(dst + j0, plane + static_cast<size_t>(iy) * g.w + ix0 + j0, static_cast<size_t>(j1 - j0));
          fill_short(dst + j1, pad, static_cast<size_t>(n - j1));
        }
      }
      return;
    }
    for (size_t c = c0; c < c1; ++c) {
      const uint8_t* plane = x + c * g.h * g.w;
      uint8_t* dst = padded_ + c * pg.plane;
      for (size_t r = 0; r < pg.rows; ++r) {
        if (g.sh > 1 && !row_read(g, r)) {
          dst += g.sw * pg.cols;
          continue;
        }
        const ptrdiff_t iy = static_cast<ptrdiff_t>(r) - static_cast<ptrdiff_t>(g.pad_top);
        for (ptrdiff_t ph = 0; ph < sw; ++ph, dst += pg.cols) {
          const Phase f = ph < kTable ? phases[ph] : make_phase(ph);
          if (!f.read) continue;  // e.g. the odd columns of a 1x1 stride 2
          if (iy < 0 || iy >= static_cast<ptrdiff_t>(g.h)) {
            fill_short(dst, pad, pg.cols);
            continue;
          }
          const uint8_t* row = plane + static_cast<size_t>(iy) * g.w;
          const ptrdiff_t ix0 = f.ix0, j0 = f.j0, j1 = f.j1;
          fill_short(dst, pad, static_cast<size_t>(j0));
          if (sw == 1) {
            if (j1 > j0) copy_short(dst + j0, row + ix0 + j0, static_cast<size_t>(j1 - j0));
          } else {
            ptrdiff_t j = j0;
#if defined(__x86_64__)
            if (sw == 2) {
              // The even bytes of 32, 16 at a time, while the loads stay inside the plane (they
              // may run into the next rows: those bytes land in columns >= j1, which the memset
              // below rewrites, or are not stored at all past the phase row).
              const __m128i even = _mm_set1_epi16(0x00FF);
              const ptrdiff_t readable = (static_cast<ptrdiff_t>(g.h) - iy) * wi;  // from row
              for (; j < j1 && ix0 + 2 * j + 32 <= readable; j += 16) {
                const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + ix0 + 2 * j));
                const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + ix0 + 2 * j + 16));
                const __m128i v = _mm_packus_epi16(_mm_and_si128(a, even), _mm_and_si128(b, even));
                if (j + 16 <= n) {
                  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + j), v);
                } else {
                  alignas(16) uint8_t tmp[16];
                  _mm_store_si128(reinterpret_cast<__m128i*>(tmp), v);
                  std::memcpy(dst + j, tmp, static_cast<size_t>(j1 - j));
                }
              }
              j = std::min(j, j1);
            }
#endif
            for (; j < j1; ++j) dst[j] = row[ix0 + j * sw];
          }
          fill_short(dst + j1, pad, static_cast<size_t>(n - j1));
        }
      }
    }
  }

  // The packed X panel of output pixels [q0, q0 + n) (n <= NR): their im2col columns, K in ONNX's
  // (c, ky, kx) order, gathered from padded_ (row_offset_ per K row) in runs of consecutive
  // pixels on one output row (the same for every K row). The loads' overshoot stays in the slack
  // at the end of padded_.
  void pack_panel(const Conv2dGeometry& g, size_t q0, size_t n, uint8_t* out) const {
    const PadGeometry pg = pad_geometry(g);
    const size_t row_bytes = g.sw * pg.cols;  // one padded row, all phases
    kernels::Qu8WxRun runs[kMaxWxNr];
    size_t count = 0;
    for (size_t q = q0; q < q0 + n; ++count) {
      const size_t oy = q / g.wo, ox0 = q % g.wo;
      const size_t seg = std::min(g.wo - ox0, q0 + n - q);
      runs[count] = {static_cast<uint32_t>(q - q0), static_cast<uint32_t>(oy * g.sh * row_bytes + ox0),
                     static_cast<uint32_t>(seg)};
      q += seg;
    }
    kernels::qu8_wxgemm_pack_x_runs(*wx_, k_, n, padded_, row_offset_.data(), runs, count, x_signed_, out);
  }

  // Spatial positions [s0, s1) of one group's cin_g planes into nhwc_ ([H*W x cin_g]).
  void to_nhwc(const uint8_t* x, size_t hw, size_t cin_g, size_t s0, size_t s1) {
    for (size_t s = s0; s < s1; ++s) {
      uint8_t* dst = nhwc_.data() + s * cin_g;
      for (size_t c = 0; c < cin_g; ++c) dst[c] = x[c * hw + s];
    }
  }

  // Rows [p0, p1) of the [P x K] im2col matrix of one group from nhwc_: per tap (ky, kx) one run
  // of cin_g channel bytes (k = (ky * kw + kx) * cin_g + c, the packed weights' order); taps in
  // the padding get x_zp's byte.
  void im2col(const Conv2dGeometry& g, size_t p0, size_t p1) {
    const uint8_t pad = static_cast<uint8_t>(x_zp_);
    const size_t cin_g = g.c / g.group;
    for (size_t pi = p0; pi < p1; ++pi) {
      const size_t oy = pi / g.wo, ox = pi % g.wo;
      uint8_t* dst = cols_.data() + pi * k_;
      for (size_t ky = 0; ky < g.kh; ++ky) {
        const ptrdiff_t iy = static_cast<ptrdiff_t>(oy * g.sh + ky * g.dh) - static_cast<ptrdiff_t>(g.pad_top);
        for (size_t kx = 0; kx < g.kw; ++kx, dst += cin_g) {
          const ptrdiff_t ix = static_cast<ptrdiff_t>(ox * g.sw + kx * g.dw) - static_cast<ptrdiff_t>(g.pad_left);
          if (iy < 0 || iy >= static_cast<ptrdiff_t>(g.h) || ix < 0 || ix >= static_cast<ptrdiff_t>(g.w)) {
            std::memset(dst, pad, cin_g);
          } else {
            std::memcpy(dst, nhwc_.data() + (static_cast<size_t>(iy) * g.w + static_cast<size_t>(ix)) * cin_g, cin_g);
          }
        }
      }
    }
  }

  const ir::Node& node_;
  std::vector<int64_t> w_dims_;
  const kernels::Qu8GemmConfig& cfg_;
  static constexpr size_t kMaxWxBlock = 1024;  // pixels per W * X block (a multiple of 32)
  static constexpr size_t kWxBlockBytes = 160 << 10;  // packed X per block
  static constexpr size_t kMaxWxNr = 64;       // pack_panel's run table (NR is 32)
  static constexpr size_t kMaxPhases = 16;     // pad_planes' per-phase table (larger strides: per row)
  const kernels::Qu8WxConfig* wx_;  // the W * X kernel, or nullptr: X * W on cfg_
  size_t wx_block_ = 32;
  bool x_signed_, y_signed_;
  int32_t x_zp_, y_zp_;
  size_t co_ = 0, k_ = 0, group_ = 1, panel_bytes_ = 0;
  AlignedFloats packed_;
  std::vector<uint8_t> nhwc_, cols_, product_;  // grow only: sized by the largest input seen
  uint8_t* padded_ = nullptr;                   // W * X: pad_planes' output, in scratch (run_wx)
  std::vector<size_t> row_offset_;              // W * X: each K row's start in padded_
  Conv2dGeometryCache geo_;
};

}  // namespace

std::unique_ptr<CpuOp> make_qlinear_dwconv(const ir::Node& node, const ir::Tensor& w, const int32_t* bias,
                                           std::vector<float> mult, bool x_signed, int32_t x_zp, bool y_signed,
                                           int32_t y_zp);

Result<std::unique_ptr<CpuOp>> make_qlinear_conv(const ir::Node& node, const CompileContext&) {
  if (!node.input(0)) return std::unique_ptr<CpuOp>();
  QConvParams q;
  if (!read_qconv_params(node, node.input(0)->type.dtype, &q).empty()) return std::unique_ptr<CpuOp>();
  const ir::Tensor& w = *node.input(3)->constant;
  if (w.dim(1) == 1 && q.group > 1) {  // depthwise: the direct kernel (cpu_qlinear_dwconv.cpp)
    return make_qlinear_dwconv(node, w, q.bias.data(), std::move(q.mult), q.x_signed, q.x_zp, q.y_signed, q.y_zp);
  }
  auto op = std::make_unique<QLinearConv>(node, w, q.x_signed, q.x_zp, q.y_signed, q.y_zp);
  if (!op->pack(w, q.bias.data(), q.mult, static_cast<size_t>(q.group))) {
    return out_of_memory(node.label() + ": packed weights");
  }
  return std::unique_ptr<CpuOp>(std::move(op));
}

}  // namespace nfuse::backends::cpu
