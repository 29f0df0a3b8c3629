// Quantized 8-bit GEMM in the W * X orientation: the output channels are GEMM rows and the
// pixels columns, so a convolution reads its NCHW input rows ([K x pixels], K = input channels x
// taps) and writes NCHW output rows with no transpose at either end.
//
//   acc[i][j] = bias'[i] + sum_k W[i][k] * X[k][j]                           (exact, in int32)
//   C[i][j]   = clamp(saturate(round_half_even(f32(acc[i][j]) * multiplier[i]) + c_zp), qmin, qmax)
//
// The arithmetic is qu8_gemm.h's to the bit (same bias' = bias - x_zp * rowsum(W) folding, same
// sign-bit flip for s8 activations and outputs, same requantization and Qu8GemmRequant epilogue;
// see "Exactness" there); only the roles change: the requantization parameters are per row, the
// weights (s8) are the broadcast operand and the activations (u8) the vector operand, which is
// what vpdpbusd's m32bcst form wants (its broadcast source is the s8 one).
//
// Layouts (MR rows, NR columns, K in groups of KR = 4):
//   packed W, per MR-row panel: MR int32 bias', kpad x MR s8 weights, w8[(g*MR + r)*4 + t] =
//     W[r][g*4 + t], then MR f32 multipliers; rows >= M zero. (qu8_gemm_pack_b's layout with
//     NR = MR, the weights read as its B^T.)
//   packed X, per NR-column panel: kpad x NR u8, x8[(g*NR + j)*4 + t] = X[g*4 + t][j] (sign bit
//     flipped for s8), zero for columns >= the panel's width and for k >= K.
//
// Besides the requantized u8 / s8 store, the kernels store a float epilogue (Qu8GemmRequant's
// f32_out: f32(acc) * multiplier + row bias), for dynamically quantized convolutions whose
// output is float.
//
// Microkernels: qu8_wxgemm__scalar_8x32 (portable: the statement of the arithmetic, and what
// tests check the SIMD one against) and qu8_wxgemm__avx512vnni_8x32 (vpdpbusd; tiles of at most
// 16 columns on one zmm). Configurations exist for Isa::kAvx512 with VNNI and for Isa::kScalar;
// under AVX2 and NEON callers keep the X * W family (qu8_gemm.h), whose SIMD kernels beat a
// scalar W * X kernel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/qu8-gemm/qu8_gemm.h"

namespace nfuse::kernels {

// One mr x nc tile (1 <= mr <= MR, 1 <= nc <= NR) over the whole padded K (kc, a multiple of 4):
// w: one packed W panel; x: one packed X panel; c: row r, column j at c[r * c_stride + j].
using Qu8WxUkernelFn = void (*)(size_t mr, size_t nc, size_t kc, const void* w, const uint8_t* x, uint8_t* c,
                                size_t c_stride, const Qu8GemmRequant& rq);

void qu8_wxgemm__scalar_8x32(size_t mr, size_t nc, size_t kc, const void* w, const uint8_t* x, uint8_t* c,
                             size_t c_stride, const Qu8GemmRequant& rq);
#if defined(__x86_64__)
void qu8_wxgemm__avx512vnni_8x32(size_t mr, size_t nc, size_t kc, const void* w, const uint8_t* x, uint8_t* c,
                                 size_t c_stride, const Qu8GemmRequant& rq);
#endif

// X read in place from channel-quad rows (backends/cpu/cpu_qconv_padded.h) instead of a packed
// panel: K group t * quads + q, column j at x + tap_offset[t] + q * quad_stride + 4 * j (the
// packed panel's 4 bytes per column). A tile reads a whole group's 4 * NR bytes (or 64 for at
// most 16 columns) from there whatever nc is: the caller keeps them inside its buffer.
struct Qu8WxQuads {
  const size_t* tap_offset = nullptr;  // taps entries
  size_t taps = 0, quads = 0, quad_stride = 0;
};
// One mr x nc tile as Qu8WxUkernelFn, over K = 4 * taps * quads (taps, quads >= 1) from x as
// `xq` says.
using Qu8WxQuadUkernelFn = void (*)(size_t mr, size_t nc, const Qu8WxQuads& xq, const void* w, const uint8_t* x,
                                    uint8_t* c, size_t c_stride, const Qu8GemmRequant& rq);
#if defined(__x86_64__)
void qu8_wxgemm_quads__avx512vnni_8x32(size_t mr, size_t nc, const Qu8WxQuads& xq, const void* w, const uint8_t* x,
                                       uint8_t* c, size_t c_stride, const Qu8GemmRequant& rq);
#endif

struct Qu8WxConfig {
  const char* name = "";
  Isa isa = Isa::kScalar;
  size_t mr = 8, nr = 32, kr = 4;
  Qu8WxUkernelFn ukernel = nullptr;
  Qu8WxQuadUkernelFn quad_ukernel = nullptr;  // or nullptr: callers pack channel quads into panels
};

// The configuration for `isa` (kScalar: the portable kernel; kAvx512 with VNNI: vpdpbusd), or
// nullptr where this family has none (callers then use qu8_gemm). Stable address.
const Qu8WxConfig* qu8_wxgemm_config(Isa isa);
// Every configuration this CPU runs (tests).
std::vector<const Qu8WxConfig*> qu8_wxgemm_configs();

// Bytes of packed W for an m x k weight matrix.
size_t qu8_wxgemm_packed_w_size(const Qu8WxConfig& cfg, size_t m, size_t k);

// Packs W (W[i][kk] = w[i * k + kk], s8), bias (int32 [m] or nullptr), multipliers (f32 [m]) and
// the activations' zero point (in their type) into MR-row panels.
void qu8_wxgemm_pack_w(const Qu8WxConfig& cfg, size_t m, size_t k, const int8_t* w, const int32_t* bias,
                       const float* multiplier, int32_t x_zero_point, bool x_signed, void* packed);

// Rewrites the int32 bias' (already x_zp-corrected: acc starts from it) and the f32 multiplier of
// rows [0, m) in a qu8_wxgemm_pack_w output, for parameters known only per run (a dynamically
// quantized input's zero point and scale).
void qu8_wxgemm_set_row_params(const Qu8WxConfig& cfg, size_t m, size_t k, const int32_t* bias_prime,
                               const float* multiplier, void* packed);

// sums[j] = sum over k of packed X panel column j (kc rows, padding included; j < NR).
void qu8_wxgemm_panel_column_sums(const Qu8WxConfig& cfg, size_t kc, const uint8_t* panel, int32_t* sums);

// Packs `cols` <= NR columns of X (X[kk][j] = x[kk * row_stride + j]) into one X panel:
// round_up(k, 4) * NR bytes.
void qu8_wxgemm_pack_x(const Qu8WxConfig& cfg, size_t k, size_t cols, const uint8_t* x, size_t row_stride,
                       bool x_signed, uint8_t* packed);

// A run of consecutive X columns [col, col + len) of a panel whose bytes are consecutive in every
// row of a gathered X (qu8_wxgemm_pack_x_runs): column col + i reads source byte src + i.
struct Qu8WxRun {
  uint32_t col, src, len;
};

// Packs `cols` <= NR columns of a gathered X into one X panel, as qu8_wxgemm_pack_x would pack
// X[kk][j] = base[row_offset[kk] + run.src + (j - run.col)] (run: the one holding column j; runs
// ascending in col and covering [0, cols) exactly). For a convolution's im2col columns read
// straight from padded input planes (one row offset per (c, ky, kx), one run per output row
// segment), so no im2col matrix is built. Reads up to 15 bytes past each run's end in every row;
// writes only the panel.
void qu8_wxgemm_pack_x_runs(const Qu8WxConfig& cfg, size_t k, size_t cols, const uint8_t* base,
                            const size_t* row_offset, const Qu8WxRun* runs, size_t run_count, bool x_signed,
                            uint8_t* packed);

#if defined(__x86_64__)
// qu8_wxgemm_pack_x_runs of the AVX-512 VNNI configuration (its caller dispatches on cfg.isa).
void qu8_wxgemm_pack_x_runs__avx512(size_t k, size_t cols, const uint8_t* base, const size_t* row_offset,
                                    const Qu8WxRun* runs, size_t run_count, bool x_signed, uint8_t* packed);
#endif

// The Qu8GemmRequant of a u8 / s8 output with zero point c_zp and clamp [qmin, qmax] (C's type).
Qu8GemmRequant qu8_requant(bool c_signed, int32_t c_zero_point, int32_t qmin, int32_t qmax);

}  // namespace nfuse::kernels
