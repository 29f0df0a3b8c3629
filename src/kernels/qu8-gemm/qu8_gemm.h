// Quantized 8-bit GEMM with fused requantization: the integer kernel family under QLinearConv
// (1x1 and implicit-GEMM KxK), QLinearMatMul and MatMulInteger / ConvInteger.
//
//   acc[i][j] = bias[j] + sum_k (A[i][k] - a_zp) * B[k][j]                  (exact, in int32)
//   C[i][j]   = clamp(saturate(round_half_even(f32(acc[i][j]) * multiplier[j]) + c_zp), qmin, qmax)
//
// for i in [0, M), j in [0, N). This is exactly requantize_value() of
// src/kernels/quant_arithmetic.h (the definition of nfuse's integer arithmetic) followed by
// a clamp in the quantized domain (fused ReLU / ReLU6 / Clip: qmin = quantize(lo), qmax =
// quantize(hi)). Every microkernel of the family gives bit-identical output: see "Exactness".
//
// Operands and types
//   A  activations, rows = output pixels / batch rows, K = input channels (x taps). u8 with any
//      zero point 0..255 (the default), or s8 (a_signed, zero point -128..127). Read through a row
//      stride and a column stride like the FP32 GEMM (NHWC, NCHW, transposed all work).
//   B  weights, s8, symmetric (zero point 0), K x N, packed once by qu8_gemm_pack_b together with
//      the int32 bias and the f32 per-column multipliers (x_scale * w_scale[j]) / y_scale.
//   C  u8 (or s8: c_signed) with output zero point c_zp and clamp [qmin, qmax] given in C's type;
//      or, with int32_out, the int32 accumulator acc itself (no requantization; MatMulInteger,
//      tests).
// The zero-point correction is folded into the bias at pack time: sum_k (A - a_zp) B =
// sum_k A B - a_zp * colsum(B), so packed bias'[j] = bias[j] - a_zp * sum_k B[k][j] and the
// microkernels compute plain u8 x s8 dot products (a_zp must therefore be known at pack time;
// QLinearConv's x_zero_point is an initializer in practice). s8 activations and outputs are
// mapped onto the u8 ones by flipping the sign bit (x ^ 0x80 == x + 128 as u8): A while packing
// (and a_zp + 128 in the correction), C at the store (c_zp, qmin, qmax + 128). So one set of
// u8 x s8 microkernels serves QLinearConv's u8/u8, s8/s8 and mixed cases.
//
// How a caller uses it (as the FP32 GEMM: B packed once, A packed per M block by the driver):
//   1. Prepare: cfg = qu8_gemm_config(); allocate qu8_gemm_packed_b_size(cfg, k, n) bytes (64-byte
//      aligned is best) and qu8_gemm_pack_b(cfg, ...) weights, bias, multipliers and a_zp into it.
//   2. Per thread: qu8_gemm_workspace_size(cfg, k) bytes of workspace (any alignment).
//   3. Run: fill a Qu8GemmArgs, split with qu8_gemm_tasks() and run qu8_gemm_task() per index, or
//      call qu8_gemm() on own [m0,m1) x [n0,n1) ranges (n0 a multiple of cfg.nr).
//
// Exactness (why every kernel equals the definition bit for bit)
//   * Products: u8 (0..255) x s8 (-128..127) lie in [-32640, 32385]. The AVX2 kernel widens both
//     to int16 and uses vpmaddwd (int16 x int16 pairs summed into int32: |pair| <= 65280, exact;
//     vpmaddwd's only wrapping case, -32768 * -32768 twice, cannot occur). It never uses
//     vpmaddubsw, whose int16 pair sum saturates (255*127*2 = 64770 > 32767): the saturation
//     trap. The AVX-512 VNNI kernel uses vpdpbusd (u8 x s8, four products summed straight into
//     int32, no intermediate saturation; not vpdpbusds). The NEON kernel widens both to int16
//     and uses smlal (int16 x int16 -> int32 multiply-accumulate, exact). The scalar kernel
//     multiplies in int32.
//   * Accumulation wraps modulo 2^32 in every kernel (SIMD adds wrap; the scalar kernel adds in
//     uint32), so all kernels agree bit for bit on acc mod 2^32, and acc is the exact value when
//     it fits int32 (precondition: |bias + sum| < 2^31; |(A - a_zp) B| <= 32640 per term, so it
//     holds for K <= 32896 with |bias| <= 2^30, K <= 65793 without bias). The packed bias'[j] and
//     the partial sums of A B may wrap on the way; modulo 2^32 that changes nothing.
//   * Requantization: f32(acc) (cvtdq2ps / scvtf / static_cast, round to nearest even, exact up
//     to 2^24), one f32 multiply (IEEE; no FMA contraction possible: there is no add), then a
//     clamp in f32 to [qmin - c_zp, qmax - c_zp] (exact small integers), rounding half to even
//     (cvtps2dq under the default MXCSR, NEON fcvtns always, std::nearbyint under FE_TONEAREST;
//     nfuse never changes the rounding mode), c_zp added in int32 and narrowing (packus /
//     vpmovdb / sqxtun, the value already in [qmin, qmax]). Clamping before rounding equals
//     saturating after it: rounding is monotone and the bounds are integers, so x > hi gives
//     round(x) >= hi and the definition saturates to qmax, as does round(hi) + c_zp; likewise
//     below; between them nothing changes. The f32 clamp also keeps cvtps2dq away from its
//     0x80000000 "integer indefinite" result for |x| >= 2^31 (huge multipliers), which would
//     otherwise turn +big into qmin. Preconditions: multiplier finite and > 0 (ONNX scales are
//     positive; a NaN product, 0 * inf, is excluded), 0 <= qmin <= qmax <= 255 in the u8 domain.
//
// Microkernels (hot code: no allocation, no checks beyond the documented preconditions):
//   qu8_gemm__scalar_4x4, qu8_gemm__scalar_1x4           portable (KR 1); the fallback
//   qu8_gemm__avx2_4x16c2, qu8_gemm__avx2_1x16c2         x86-64 AVX2 (A packed as int16 pairs,
//                                                        B as s8 pairs widened by vpmovsxbw)
//   qu8_gemm__avx512vnni_8x32c4, qu8_gemm__avx512vnni_1x32c4
//                                                        AVX-512 F/BW/VL + VNNI (vpdpbusd)
//   qu8_gemm__neon_8x8, qu8_gemm__neon_1x8               aarch64 baseline NEON (A as u16, B
//                                                        widened by sxtl, smlal by lane)
// Name: qu8_gemm__<isa>_<MR>x<NR>c<KR>: MR rows, NR columns, K consumed in groups of KR.
// Each MRxNR kernel has a 1xNR partner with the same B layout for the M % MR tail rows.
// The transposed orientation (weights as rows, requantization per row: NCHW convolutions with
// no transposes) is qu8_wxgemm.h, same arithmetic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/gemm_tasks.h"

namespace nfuse::kernels {

// ---- Microkernel interface -------------------------------------------------------------------

// The epilogue of one microkernel call, in the u8 domain (s8 outputs already shifted by 128).
struct Qu8GemmRequant {
  float lo = 0.0f;          // qmin - c_zp, as f32 (exact)
  float hi = 255.0f;        // qmax - c_zp, as f32 (exact)
  int32_t zero_point = 0;   // c_zp, 0..255
  uint32_t out_xor = 0;     // 0x80: store s8 (the u8 result with its sign bit flipped), else 0
  bool int32_out = false;   // store acc as int32 instead (c is int32_t*, c_stride in elements)
  // W * X kernels only (qu8_wxgemm.h): store min(hi, max(lo, f32(acc) * multiplier[r] +
  // row_bias[r])) as f32 (c is float*, c_stride in elements; lo / hi are then float bounds, -inf /
  // +inf for none: a fused Relu or Clip), a multiply then an add, never an FMA, NaN passed through
  // the clamp. row_bias: this tile's MR rows (all MR readable).
  bool f32_out = false;
  const float* row_bias = nullptr;
  // f32_out with row_factor: acc += row_factor[r] * col_term[j] (int32, wrapping) before the
  // conversion: the zero-point cross term of weights whose zero point is not folded (row_factor:
  // the tile's MR rows; col_term: the tile's columns).
  const int32_t* row_factor = nullptr;
  const int32_t* col_term = nullptr;
};

// Computes one mr x nc tile (1 <= mr <= MR, 1 <= nc <= NR) over the whole (padded) K:
//   acc = bias' + A_panel * B_panel;  C = int32_out ? acc : requantize(acc)
// a: an A panel packed by qu8_gemm_pack_a for this kernel's MR/KR/element (rows >= mr zero).
// w: one packed B panel (qu8_gemm_pack_b): NR int32 bias', kc x NR s8 weights in KR groups
//    (w8[(g*NR + j)*KR + t] = B[g*KR + t][j]), NR f32 multipliers; columns >= nc zero.
// kc: K rounded up to KR (the padding is zero in both panels).
// c: row r, column j at c[r*c_stride + j] (bytes, or int32 elements); only the tile is written.
using Qu8GemmUkernelFn = void (*)(size_t mr, size_t nc, size_t kc, const void* a, const void* w, void* c,
                                  size_t c_stride, const Qu8GemmRequant& rq);

void qu8_gemm__scalar_4x4(size_t mr, size_t nc, size_t kc, const void* a, const void* w, void* c,
                          size_t c_stride, const Qu8GemmRequant& rq);
void qu8_gemm__scalar_1x4(size_t mr, size_t nc, size_t kc, const void* a, const void* w, void* c,
                          size_t c_stride, const Qu8GemmRequant& rq);
#if defined(__x86_64__)
void qu8_gemm__avx2_4x16c2(size_t mr, size_t nc, size_t kc, const void* a, const void* w, void* c,
                           size_t c_stride, const Qu8GemmRequant& rq);
void qu8_gemm__avx2_1x16c2(size_t mr, size_t nc, size_t kc, const void* a, const void* w, void* c,
                           size_t c_stride, const Qu8GemmRequant& rq);
void qu8_gemm__avx512vnni_8x32c4(size_t mr, size_t nc, size_t kc, const void* a, const void* w, void* c,
                                 size_t c_stride, const Qu8GemmRequant& rq);
void qu8_gemm__avx512vnni_1x32c4(size_t mr, size_t nc, size_t kc, const void* a, const void* w, void* c,
                                 size_t c_stride, const Qu8GemmRequant& rq);
#endif
#if defined(__aarch64__)
void qu8_gemm__neon_8x8(size_t mr, size_t nc, size_t kc, const void* a, const void* w, void* c, size_t c_stride,
                        const Qu8GemmRequant& rq);
void qu8_gemm__neon_1x8(size_t mr, size_t nc, size_t kc, const void* a, const void* w, void* c, size_t c_stride,
                        const Qu8GemmRequant& rq);
#endif

// ---- Configuration (chosen per ISA, once) ------------------------------------------------------

struct Qu8GemmConfig {
  const char* name = "";   // e.g. "avx2_4x16c2"
  Isa isa = Isa::kScalar;  // selected when selected_isa() is this ISA (and the CPU runs it)
  size_t mr = 0;           // rows of `ukernel`; A panels are mr high
  size_t nr = 0;           // columns of both kernels; B is packed in nr-wide panels
  size_t kr = 0;           // K group: K is padded to a multiple of kr
  size_t a_elem = 1;       // bytes per packed A element: 1 (u8) or 2 (u16, zero-extended u8)
  Qu8GemmUkernelFn ukernel = nullptr;    // mr x nr
  Qu8GemmUkernelFn ukernel_1 = nullptr;  // 1 x nr, for the M % mr tail rows
  size_t nc = 0;  // N block (multiple of nr): the packed B slice swept by every M block
};

// The configuration used when selected_isa() == isa, or nullptr if this CPU cannot run it
// (kAvx512 needs AVX-512 BW, VL and VNNI besides F, else it uses the AVX2 kernels). Stable
// address.
const Qu8GemmConfig* qu8_gemm_config(Isa isa);
// The configuration for selected_isa(): what production callers use.
const Qu8GemmConfig& qu8_gemm_config();
// Every distinct configuration this CPU runs (for tests and benchmarks).
std::vector<const Qu8GemmConfig*> qu8_gemm_configs();

// ---- Packing ----------------------------------------------------------------------------------

// Bytes qu8_gemm_pack_b writes for a k x n B.
size_t qu8_gemm_packed_b_size(const Qu8GemmConfig& cfg, size_t k, size_t n);

// Packs B (B[kk][j] = b[kk*b_k_stride + j*b_n_stride], s8), bias (int32 [n] or nullptr = 0) and
// multiplier (f32 [n], or nullptr = all 1.0; unused in int32_out mode) into NR-wide panels, one
// after the other, each: NR int32 bias'[j] = bias[j] - a_zp_u8 * sum_k B[k][j] (mod 2^32), then
// kpad x NR weights in KR groups, then NR f32 multipliers; zero for columns >= n.
// a_zero_point is A's zero point in A's type (0..255, or -128..127 when a_signed).
// ONNX MatMul B (K x N row-major): strides (n, 1); Conv weights [N][K]: strides (1, k).
void qu8_gemm_pack_b(const Qu8GemmConfig& cfg, size_t k, size_t n, const int8_t* b, size_t b_k_stride,
                     size_t b_n_stride, const int32_t* bias, const float* multiplier, int32_t a_zero_point,
                     bool a_signed, void* packed);

// Packs `rows` <= mr rows and k columns of A (A[i][kk] = a[i*a_row_stride + kk*a_col_stride])
// into one panel for K group kr and element size a_elem: element (g*mr + r)*kr + t holds
// A[r][g*kr + t] (sign bit flipped when a_signed), zero for rows >= `rows` and for kk >= k.
// Writes round_up(k, kr) * mr * a_elem bytes.
void qu8_gemm_pack_a(size_t mr, size_t kr, size_t a_elem, size_t rows, size_t k, const uint8_t* a,
                     size_t a_row_stride, size_t a_col_stride, bool a_signed, void* packed);

// ---- Driver -------------------------------------------------------------------------------------

struct Qu8GemmArgs {
  size_t m = 0, n = 0, k = 0;
  const uint8_t* a = nullptr;  // A[i][kk] = a[i*a_row_stride + kk*a_col_stride] (u8, or s8 bits)
  size_t a_row_stride = 0;
  size_t a_col_stride = 1;
  bool a_signed = false;           // must match qu8_gemm_pack_b's
  const void* b_packed = nullptr;  // qu8_gemm_pack_b(cfg, k, n, ...) output
  void* c = nullptr;               // C[i][j] = c[i*c_stride + j]: uint8_t (int8_t), or int32_t
  size_t c_stride = 0;             // in elements
  bool c_signed = false;           // C is s8: zero_point, qmin, qmax are in -128..127
  int32_t c_zero_point = 0;
  int32_t qmin = 0, qmax = 255;    // clamp in C's type (e.g. ReLU: qmin = c_zero_point)
  bool int32_out = false;          // C = acc as int32; c_zero_point, qmin, qmax unused
};

// Bytes of per-thread workspace qu8_gemm/qu8_gemm_task need for this config and K.
size_t qu8_gemm_workspace_size(const Qu8GemmConfig& cfg, size_t k);

// Computes C rows [m0, m1) x columns [n0, n1) (m0 <= m1 <= m, n0 <= n1 <= n, n0 % cfg.nr == 0).
void qu8_gemm(const Qu8GemmConfig& cfg, const Qu8GemmArgs& args, size_t m0, size_t m1, size_t n0, size_t n1,
              void* workspace);

using Qu8GemmTasks = GemmTasks;  // kernels/gemm_tasks.h

// gemm_tasks with GemmSplit::kRowsFirst: up to 4 tasks per worker, none under ~64K
// multiply-adds, M split first, a row tile per M range when there are fewer.
Qu8GemmTasks qu8_gemm_tasks(const Qu8GemmConfig& cfg, size_t m, size_t n, size_t k, size_t threads);

// Runs task `index` (< tasks.count()) of `tasks`.
void qu8_gemm_task(const Qu8GemmConfig& cfg, const Qu8GemmArgs& args, const Qu8GemmTasks& tasks, size_t index,
                   void* workspace);

}  // namespace nfuse::kernels
