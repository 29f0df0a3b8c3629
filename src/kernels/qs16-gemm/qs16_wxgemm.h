// The 16-bit-activation GEMM (W8A16) in the W * X orientation: output channels are GEMM rows and
// pixels columns, so a convolution reads its NCHW input rows ([K x pixels], K = input channels x
// taps) and writes NCHW output rows with no transpose at either end (as qu8_wxgemm.h does for
// 8-bit activations).
//
//   acc[i][j] = bias'[i] + sum_k W[i][k] * X[k][j]                          (exact, in int64)
//   C[i][j]   = clamp(saturate(round_half_even(f32(acc[i][j]) * multiplier[i]) + c_zp), qmin, qmax)
//
// The arithmetic is qs16_gemm.h's to the bit (same bias' = bias - x_zp * rowsum(W) folding in
// the int16 domain, same sign-bit flip for u16 activations and outputs, same f32(acc) and
// Qs16GemmRequant epilogue; see "Exactness" there); only the roles change: the requantization
// parameters are per row, the weights are the broadcast operand (an int16 pair per K pair, what
// vpdpwssd's m32bcst form reads) and the activations the vector operand.
//
// Accumulator width, decided per MR-row panel at pack time: the int32 sums are exact over the
// whole K when every row's sum of |w| is at most 65535 (then |sum| <= 65535 * 32768 < 2^31, and
// wrapping int32 adds end on the exact value); otherwise the kernels sum int32 over chunks of
// kQs16GemmKChunk and add each chunk into int64 totals, as qs16_gemm does for every K.
//
// Layouts (MR = 8 rows, NR = 32 columns, K in pairs):
//   packed W, per MR-row panel: MR int64 bias', MR f32 multipliers, one uint32 (K pairs per int32
//     chunk), padding to kQs16WxHeaderBytes; then kpad / 2 x MR int16 pairs,
//     w16[(g*MR + r)*2 + t] = W[r][g*2 + t]; rows >= M zero.
//   packed X, per NR-column panel: kpad / 2 x NR int16 pairs, x16[(g*NR + s)*2 + t] = X[g*2 + t][j]
//     with s = qs16_wxgemm_x_slot(cfg, j) (sign bit flipped for u16), zero for columns >= the
//     panel's width and for k >= K. The scalar configuration keeps columns in order (s = j); the
//     AVX-512 one takes vpunpck{l,h}wd's order, in which two rows interleave without a lane-
//     crossing permute (a vpermt2w per vector had made packing a third of the GEMM's time): slot
//     s < 16 holds column 8 (s / 4) + s % 4, slot 16 + s column 8 (s / 4) + 4 + s % 4; its
//     microkernel puts the columns back in order when it stores C.
//
// Microkernels: qs16_wxgemm__scalar_8x32 (portable: the statement of the arithmetic, what tests
// check the SIMD one against) and qs16_wxgemm__avx512vnni_8x32 (vpdpwssd). Configurations exist
// for Isa::kScalar and Isa::kAvx512 with VNNI; under AVX2 and NEON callers keep qs16_gemm.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/qs16-gemm/qs16_gemm.h"

namespace nfuse::kernels {

constexpr size_t kQs16WxHeaderBytes = 128;  // bias', multipliers and the chunk length of a W panel

// One mr x nc tile (1 <= mr <= MR, 1 <= nc <= NR) over the whole padded K (kc, even): w: one
// packed W panel; x: one packed X panel; c: row r, column j at c[r * c_stride + j] (int16 or u16
// bits; only the tile is written).
using Qs16WxUkernelFn = void (*)(size_t mr, size_t nc, size_t kc, const void* w, const int16_t* x, uint16_t* c,
                                 size_t c_stride, const Qs16GemmRequant& rq);

void qs16_wxgemm__scalar_8x32(size_t mr, size_t nc, size_t kc, const void* w, const int16_t* x, uint16_t* c,
                              size_t c_stride, const Qs16GemmRequant& rq);
#if defined(__x86_64__)
void qs16_wxgemm__avx512vnni_8x32(size_t mr, size_t nc, size_t kc, const void* w, const int16_t* x, uint16_t* c,
                                  size_t c_stride, const Qs16GemmRequant& rq);
#endif

struct Qs16WxConfig {
  const char* name = "";
  Isa isa = Isa::kScalar;
  size_t mr = 8, nr = 32, kr = 2;
  Qs16WxUkernelFn ukernel = nullptr;
  bool unpack_order = false;  // packed X columns in vpunpck order (see "Layouts")
};

// The slot of column j (< NR) in a packed X panel of `cfg`.
size_t qs16_wxgemm_x_slot(const Qs16WxConfig& cfg, size_t j);

// The configuration for `isa` (kScalar: the portable kernel; kAvx512 with BW, VL and VNNI:
// vpdpwssd), or nullptr where this family has none (callers then use qs16_gemm). Stable address.
const Qs16WxConfig* qs16_wxgemm_config(Isa isa);
// Every configuration this CPU runs (tests).
std::vector<const Qs16WxConfig*> qs16_wxgemm_configs();

// Bytes of packed W for an m x k weight matrix.
size_t qs16_wxgemm_packed_w_size(const Qs16WxConfig& cfg, size_t m, size_t k);

// Packs W (W[i][kk] = w[i * k + kk], s8), bias (int32 [m] or nullptr), multipliers (f32 [m]) and
// the activations' zero point (in their type: u16 when x_unsigned) into MR-row panels.
void qs16_wxgemm_pack_w(const Qs16WxConfig& cfg, size_t m, size_t k, const int8_t* w, const int32_t* bias,
                        const float* multiplier, int32_t x_zero_point, bool x_unsigned, void* packed);

// Packs `cols` <= NR columns of X (X[kk][j] = x[kk * row_stride + j], 16-bit elements) into one
// X panel: round_up(k, 2) * NR int16.
void qs16_wxgemm_pack_x(const Qs16WxConfig& cfg, size_t k, size_t cols, const uint16_t* x, size_t row_stride,
                        bool x_unsigned, int16_t* packed);

// A run of consecutive X columns [col, col + len) of a panel whose elements are consecutive in
// every row of a gathered X: column col + i reads source element src + i.
struct Qs16WxRun {
  uint32_t col, src, len;
};

// Packs `cols` <= NR columns of a gathered X into one X panel, as qs16_wxgemm_pack_x would pack
// X[kk][j] = base[row_offset[kk] + run.src + (j - run.col)] (run: the one holding column j; runs
// ascending in col and covering [0, cols) exactly): a convolution's im2col columns read straight
// from padded input planes. Writes only the panel. May read, in every K row, the NR elements
// from src - col of each run: callers keep NR elements readable after the gathered X (and
// src >= col holds for every run, so nothing before it is read).
void qs16_wxgemm_pack_x_runs(const Qs16WxConfig& cfg, size_t k, size_t cols, const uint16_t* base,
                             const size_t* row_offset, const Qs16WxRun* runs, size_t run_count, bool x_unsigned,
                             int16_t* packed);

// One panel of qs16_wxgemm_pack_x_panels: its width, its runs (as qs16_wxgemm_pack_x_runs takes
// them) and where it goes.
struct Qs16WxPanel {
  size_t cols = 0;
  const Qs16WxRun* runs = nullptr;
  size_t run_count = 0;
  int16_t* packed = nullptr;
};

// qs16_wxgemm_pack_x_runs of every panel, K pair by K pair across the panels: the source rows are
// read front to back, one stream per K row, instead of every K row once per 32-column panel
// (K streams at once: the packer waited on memory for most of its time).
void qs16_wxgemm_pack_x_panels(const Qs16WxConfig& cfg, size_t k, const Qs16WxPanel* panels, size_t count,
                               const uint16_t* base, const size_t* row_offset, bool x_unsigned);

#if defined(__x86_64__)
void qs16_wxgemm_pack_x_panels__avx512(size_t k, const Qs16WxPanel* panels, size_t count, const uint16_t* base,
                                       const size_t* row_offset, bool x_unsigned);
// qs16_wxgemm_pack_x_runs of the AVX-512 configuration (its caller dispatches on cfg.isa).
void qs16_wxgemm_pack_x_runs__avx512(size_t k, size_t cols, const uint16_t* base, const size_t* row_offset,
                                     const Qs16WxRun* runs, size_t run_count, bool x_unsigned, int16_t* packed);
#endif

// The Qs16GemmRequant of an int16 / u16 output with zero point c_zp and clamp [qmin, qmax] (C's type).
Qs16GemmRequant qs16_requant(bool c_unsigned, int32_t c_zero_point, int32_t qmin, int32_t qmax);

}  // namespace nfuse::kernels
