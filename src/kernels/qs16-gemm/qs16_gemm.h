// Quantized 16-bit-activation GEMM (W8A16) with fused requantization: the integer kernel family
// under nfuse.QLinearConv16 and nfuse.QLinearMatMul16 (src/ops/qlinear16.cpp).
//
//   acc[i][j] = bias[j] + sum_k (A[i][k] - a_zp) * B[k][j]                  (exact, in int64)
//   C[i][j]   = clamp(saturate(round_half_even(f32(acc[i][j]) * multiplier[j]) + c_zp), qmin, qmax)
//
// exactly requantize_value<int16_t / uint16_t>() of src/kernels/quant_arithmetic.h followed by
// a clamp in the quantized domain. Every microkernel of the family gives bit-identical output.
//
// Operands and types
//   A  activations, int16 with any zero point (the default) or uint16 (a_unsigned). Read through
//      a row stride and a column stride (NHWC, NCHW, transposed all work).
//   B  weights, s8, symmetric (zero point 0), K x N, packed once by qs16_gemm_pack_b with the
//      bias and the f32 per-column multipliers (x_scale * w_scale[j]) / y_scale.
//   C  int16 (or uint16: c_unsigned) with zero point c_zp and clamp [qmin, qmax] in C's type.
// The zero-point correction is folded into an int64 bias at pack time (exact):
// bias'[j] = bias[j] - a_zp * sum_k B[k][j], so the microkernels compute plain A x B dot products.
// u16 activations and outputs map onto int16 by flipping the sign bit (x ^ 0x8000 == x - 32768
// as int16): A while packing (and a_zp - 32768 in the correction), C at the store.
//
// Exactness (why every kernel equals the definition bit for bit)
//   * Products: int16 x s8 lie in [-2^22, 2^22] (-32768 * -128 = 2^22). A pair sum (vpmaddwd,
//     vpdpwssd) is at most 2^23 in magnitude; smlal adds single products. An int32 partial sum is
//     therefore exact over any 256 consecutive K (256 * 2^22 = 2^30 < 2^31), but not beyond:
//     512 products of -32768 * -128 already reach 2^31. So every SIMD kernel accumulates in int32
//     over K chunks of kQs16GemmKChunk = 256 and adds each chunk's sum into an int64 total
//     (sign-extended); the scalar kernel multiplies and adds in int64. acc is then the exact
//     integer for any K <= 2^26 (|acc| <= 2^31 + K * 2^22 < 2^51).
//   * f32(acc): int64 -> f64 is exact for |acc| < 2^51 (the SIMD kernels use the 1.5 * 2^52
//     "magic number" conversion, exact in that range), f64 -> f32 rounds once to nearest even:
//     the same value as static_cast<float>(int64) (one correct rounding of the exact value).
//   * Then one f32 multiply, a clamp in f32 to [qmin - c_zp, qmax - c_zp] (exact integers),
//     rounding half to even (cvtps2dq under the default MXCSR, fcvtns, std::nearbyint), + c_zp
//     in int32, narrowing with the value already in range. Clamping before rounding equals
//     saturating after it (rounding is monotone, the bounds are integers). Preconditions:
//     multiplier finite and > 0; qmin <= qmax within C's type.
//
// Microkernels (hot code: no allocation, no checks beyond the documented preconditions):
//   qs16_gemm__scalar_4x4, qs16_gemm__scalar_1x4          portable (KR 1, int64 multiply-add)
//   qs16_gemm__avx2_4x16c2, qs16_gemm__avx2_1x16c2        AVX2: A as int16 pairs broadcast,
//                                                         B s8 pairs widened by vpmovsxbw, vpmaddwd
//   qs16_gemm__avx512vnni_8x32c2, qs16_gemm__avx512vnni_1x32c2
//                                                         AVX-512 BW/VL + VNNI (vpdpwssd, the
//                                                         non-saturating form)
//   qs16_gemm__neon_8x8, qs16_gemm__neon_1x8              aarch64 NEON: B widened by sxtl,
//                                                         smlal by lane (vmlal_laneq_s16)
// Name: qs16_gemm__<isa>_<MR>x<NR>c<KR>. Each MRxNR kernel has a 1xNR partner for M % MR rows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/gemm_tasks.h"

namespace nfuse::kernels {

// K elements over which the SIMD kernels may sum int32 products before widening to int64.
constexpr size_t kQs16GemmKChunk = 256;

// The epilogue of one microkernel call, in the int16 domain (u16 outputs shifted by -32768).
struct Qs16GemmRequant {
  float lo = -32768.0f;    // qmin - c_zp, as f32 (exact)
  float hi = 32767.0f;     // qmax - c_zp, as f32 (exact)
  int32_t zero_point = 0;  // c_zp in the int16 domain
  uint16_t out_xor = 0;    // 0x8000: store u16 (the int16 result with its sign bit flipped)
};

// Computes one mr x nc tile (1 <= mr <= MR, 1 <= nc <= NR) over the whole (padded) K:
//   acc = bias' + A_panel * B_panel;  C = requantize(acc)
// a: an A panel packed by qs16_gemm_pack_a for this kernel's MR/KR (int16; rows >= mr zero).
// w: one packed B panel (qs16_gemm_pack_b): NR int64 bias', kc x NR s8 weights in KR groups
//    (w8[(g*NR + j)*KR + t] = B[g*KR + t][j]), NR f32 multipliers; columns >= nc zero.
// kc: K rounded up to KR (the padding is zero in both panels), <= 2^26.
// c: int16 elements, row r, column j at c[r*c_stride + j]; only the tile is written.
using Qs16GemmUkernelFn = void (*)(size_t mr, size_t nc, size_t kc, const int16_t* a, const void* w, int16_t* c,
                                   size_t c_stride, const Qs16GemmRequant& rq);

#define NFUSE_QS16_UKERNEL(name)                                                                            \
  void name(size_t mr, size_t nc, size_t kc, const int16_t* a, const void* w, int16_t* c, size_t c_stride, \
            const Qs16GemmRequant& rq)
NFUSE_QS16_UKERNEL(qs16_gemm__scalar_4x4);
NFUSE_QS16_UKERNEL(qs16_gemm__scalar_1x4);
#if defined(__x86_64__)
NFUSE_QS16_UKERNEL(qs16_gemm__avx2_4x16c2);
NFUSE_QS16_UKERNEL(qs16_gemm__avx2_1x16c2);
NFUSE_QS16_UKERNEL(qs16_gemm__avx512vnni_8x32c2);
NFUSE_QS16_UKERNEL(qs16_gemm__avx512vnni_1x32c2);
#endif
#if defined(__aarch64__)
NFUSE_QS16_UKERNEL(qs16_gemm__neon_8x8);
NFUSE_QS16_UKERNEL(qs16_gemm__neon_1x8);
#endif
#undef NFUSE_QS16_UKERNEL

// ---- Configuration (chosen per ISA, once) ------------------------------------------------------

struct Qs16GemmConfig {
  const char* name = "";   // e.g. "avx2_4x16c2"
  Isa isa = Isa::kScalar;
  size_t mr = 0;           // rows of `ukernel`; A panels are mr high
  size_t nr = 0;           // columns of both kernels; B is packed in nr-wide panels
  size_t kr = 0;           // K group: K is padded to a multiple of kr
  Qs16GemmUkernelFn ukernel = nullptr;    // mr x nr
  Qs16GemmUkernelFn ukernel_1 = nullptr;  // 1 x nr, for the M % mr tail rows
};

// The configuration used when selected_isa() == isa, or nullptr if this CPU cannot run it
// (kAvx512 needs BW, VL and VNNI besides F, else it uses the AVX2 kernels). Stable address.
const Qs16GemmConfig* qs16_gemm_config(Isa isa);
// The configuration for selected_isa(): what production callers use.
const Qs16GemmConfig& qs16_gemm_config();
// Every distinct configuration this CPU runs (for tests and benchmarks).
std::vector<const Qs16GemmConfig*> qs16_gemm_configs();

// ---- Packing ----------------------------------------------------------------------------------

// Bytes qs16_gemm_pack_b writes for a k x n B.
size_t qs16_gemm_packed_b_size(const Qs16GemmConfig& cfg, size_t k, size_t n);

// Packs B (B[kk][j] = b[kk*b_k_stride + j*b_n_stride], s8), bias (int32 [n] or nullptr = 0) and
// multiplier (f32 [n], or nullptr = all 1.0) into NR-wide panels, each: NR int64
// bias'[j] = bias[j] - a_zp * sum_k B[k][j] (a_zp in the int16 domain), kpad x NR weights in KR
// groups, NR f32 multipliers; zero for columns >= n. a_zero_point is in A's type (u16 when
// a_unsigned). ONNX MatMul B (K x N): strides (n, 1); Conv weights [N][K]: strides (1, k).
void qs16_gemm_pack_b(const Qs16GemmConfig& cfg, size_t k, size_t n, const int8_t* b, size_t b_k_stride,
                      size_t b_n_stride, const int32_t* bias, const float* multiplier, int32_t a_zero_point,
                      bool a_unsigned, void* packed);

// Packs `rows` <= mr rows and k columns of A (A[i][kk] = a[i*a_row_stride + kk*a_col_stride],
// 16-bit elements) into one panel for K group kr: element (g*mr + r)*kr + t holds A[r][g*kr + t]
// (sign bit flipped when a_unsigned), zero for rows >= `rows` and kk >= k.
// Writes round_up(k, kr) * mr int16.
void qs16_gemm_pack_a(size_t mr, size_t kr, size_t rows, size_t k, const uint16_t* a, size_t a_row_stride,
                      size_t a_col_stride, bool a_unsigned, int16_t* packed);

// ---- Driver -------------------------------------------------------------------------------------

struct Qs16GemmArgs {
  size_t m = 0, n = 0, k = 0;
  const uint16_t* a = nullptr;  // A[i][kk] = a[i*a_row_stride + kk*a_col_stride] (int16 or u16 bits)
  size_t a_row_stride = 0;      // in elements
  size_t a_col_stride = 1;
  bool a_unsigned = false;         // must match qs16_gemm_pack_b's
  const void* b_packed = nullptr;  // qs16_gemm_pack_b(cfg, k, n, ...) output
  uint16_t* c = nullptr;           // C[i][j] = c[i*c_stride + j]: int16 (or u16) bits
  size_t c_stride = 0;             // in elements
  bool c_unsigned = false;         // C is u16: zero_point, qmin, qmax are in 0..65535
  int32_t c_zero_point = 0;
  int32_t qmin = -32768, qmax = 32767;  // clamp in C's type
};

// Bytes of per-thread workspace qs16_gemm / qs16_gemm_task need for this config and K.
size_t qs16_gemm_workspace_size(const Qs16GemmConfig& cfg, size_t k);

// Computes C rows [m0, m1) x columns [n0, n1) (n0 % cfg.nr == 0).
void qs16_gemm(const Qs16GemmConfig& cfg, const Qs16GemmArgs& args, size_t m0, size_t m1, size_t n0, size_t n1,
               void* workspace);

// As qu8_gemm_tasks (kernels/gemm_tasks.h).
GemmTasks qs16_gemm_tasks(const Qs16GemmConfig& cfg, size_t m, size_t n, size_t k, size_t threads);

// Runs task `index` (< tasks.count()) of `tasks`.
void qs16_gemm_task(const Qs16GemmConfig& cfg, const Qs16GemmArgs& args, const GemmTasks& tasks, size_t index,
                    void* workspace);

}  // namespace nfuse::kernels
