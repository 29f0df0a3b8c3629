// FP32 GEMM with a fused epilogue: the kernel family under 1x1 and implicit-GEMM convolutions,
// Gemm/MatMul and the LSTM/GRU gate products.
//
//   C[i][j] = clamp(bias[j] + sum_k A[i][k] * B[k][j] + R[i][j], min, max)
//
// for i in [0, M), j in [0, N). A holds activations (rows = output pixels / batch rows, columns =
// input channels), B the weights (K x N, N = output channels), bias and the residual R are
// optional, min/max cover ReLU (0, +inf), ReLU6 (0, 6) and Clip.
//
// How a caller uses it (Goto/BLIS scheme: B packed once, A packed per cache block):
//   1. Prepare time: cfg = f32_gemm_config(); allocate f32_gemm_packed_b_size(k, n, cfg.nr)
//      floats (64-byte aligned is best) and f32_gemm_pack_b(cfg, ...) the weights into it, once.
//   2. Per thread: a workspace of f32_gemm_workspace_size(cfg, k) bytes (any alignment; the
//      driver packs blocks of A into it). Allocate it at prepare time too: the driver allocates
//      nothing.
//   3. Run time: fill an F32GemmArgs, split the output with f32_gemm_tasks() and have each thread
//      run f32_gemm_task() on its indices (or call f32_gemm() on own [m0,m1) x [n0,n1) ranges;
//      n0 must be a multiple of cfg.nr). Tasks write disjoint parts of C.
//
// A is read through a row stride and a column stride (A[i][k] = a[i*a_row_stride +
// k*a_col_stride]) and packed by the driver, so NHWC (row stride = channels, column stride 1)
// and NCHW (row stride 1, column stride = H*W) activations and transposed MatMul operands all
// work without a separate transpose. Packing A costs one pass over A per (K block, N block),
// small next to the 2*N FLOPs every element of A feeds.
//
// Microkernels (hot code: no allocation, no checks beyond the documented preconditions):
//   f32_gemm__scalar_4x8, f32_gemm__scalar_1x8     portable; the fallback and the test oracle
//   f32_gemm__avx2_6x16, f32_gemm__avx2_1x16       x86-64 AVX2 + FMA3 (-mavx2 -mfma, that file only)
//   f32_gemm__avx512_12x32, f32_gemm__avx512_1x32  x86-64 AVX-512F (-mavx512f, that file only)
//   f32_gemm__avx512_8x32                          its 8-row variant (see f32_gemm_config_for_rows)
//   f32_gemm__neon_8x8, f32_gemm__neon_1x8         aarch64
// Each MRxNR kernel has a 1xNR partner with the same B layout; the driver uses the partner for the
// M % MR tail rows (it runs at the same FLOP rate per row, so tails cost no padding waste).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/gemm_tasks.h"

namespace nfuse::kernels {

// ---- Microkernel interface -------------------------------------------------------------------

// Flags of one microkernel call, i.e. of one K block of one output tile.
inline constexpr uint32_t kF32GemmLoadC = 1u << 0;  // accumulate onto C (not the first K block)
inline constexpr uint32_t kF32GemmFinal = 1u << 1;  // last K block: clamp
// B is a packed panel followed in memory by the next one (kc x NR floats on): kernels that
// honour it (AVX-512) prefetch that panel's row k into L2 while computing row k of this one, so
// weights streamed from DRAM arrive while the FMAs run. Others ignore it.
inline constexpr uint32_t kF32GemmPrefetchNextPanel = 1u << 2;

// What a microkernel does besides the product, with pointers already offset to the tile.
struct F32GemmEpilogue {
  const float* bias = nullptr;      // nc values, one per column; read only without kF32GemmLoadC
  const float* row_bias = nullptr;  // mr values, one per row (the W * X orientation's per-output-
                                    // channel bias); read only without kF32GemmLoadC
  const float* residual = nullptr;  // mr x nc, read only without kF32GemmLoadC; may alias c (same stride)
  size_t residual_stride = 0;       // elements between residual rows
  float min = -std::numeric_limits<float>::infinity();  // applied only with kF32GemmFinal
  float max = std::numeric_limits<float>::infinity();
};

// Computes one mr x nc tile (1 <= mr <= MR, 1 <= nc <= NR, kc >= 0):
//   acc = (flags & kF32GemmLoadC) ? C : (bias ? bias : 0) + (row_bias ? row_bias : 0) + (residual ? R : 0)
//   acc += A_panel * B_panel                       (kc steps)
//   if (flags & kF32GemmFinal) acc = clamp(acc, min, max)
//   C = acc
// The residual joins the first K block (not the last) so that it may alias C: it is read before
// any K block overwrites C with partial sums.
// a: an A panel packed by f32_gemm_pack_a for this kernel's MR (a[k*MR + r], rows >= mr zero).
// b: kc rows of NR floats, row k at b + k * b_stride: b_stride = NR for a K block of a panel
//    written by f32_gemm_pack_b (columns >= nc zero), or the row stride of an unpacked matrix
//    (e.g. an NCHW activation's H*W, so a 1x1 convolution needs no packing) when nc == NR: all NR
//    columns of every row are read, whatever nc is.
// c: row r, column j at c[r*c_stride + j]; only the mr x nc tile is read or written.
using F32GemmUkernelFn = void (*)(size_t mr, size_t nc, size_t kc, const float* a, const float* b, size_t b_stride, float* c,
                                  size_t c_stride, uint32_t flags, const F32GemmEpilogue& ep);

void f32_gemm__scalar_4x8(size_t mr, size_t nc, size_t kc, const float* a, const float* b, size_t b_stride, float* c,
                          size_t c_stride, uint32_t flags, const F32GemmEpilogue& ep);
void f32_gemm__scalar_1x8(size_t mr, size_t nc, size_t kc, const float* a, const float* b, size_t b_stride, float* c,
                          size_t c_stride, uint32_t flags, const F32GemmEpilogue& ep);
#if defined(__x86_64__)
void f32_gemm__avx2_6x16(size_t mr, size_t nc, size_t kc, const float* a, const float* b, size_t b_stride, float* c,
                         size_t c_stride, uint32_t flags, const F32GemmEpilogue& ep);
void f32_gemm__avx2_1x16(size_t mr, size_t nc, size_t kc, const float* a, const float* b, size_t b_stride, float* c,
                         size_t c_stride, uint32_t flags, const F32GemmEpilogue& ep);
void f32_gemm__avx512_12x32(size_t mr, size_t nc, size_t kc, const float* a, const float* b, size_t b_stride, float* c,
                            size_t c_stride, uint32_t flags, const F32GemmEpilogue& ep);
void f32_gemm__avx512_8x32(size_t mr, size_t nc, size_t kc, const float* a, const float* b, size_t b_stride, float* c,
                           size_t c_stride, uint32_t flags, const F32GemmEpilogue& ep);
void f32_gemm__avx512_1x32(size_t mr, size_t nc, size_t kc, const float* a, const float* b, size_t b_stride, float* c,
                           size_t c_stride, uint32_t flags, const F32GemmEpilogue& ep);
#endif
#if defined(__aarch64__)
void f32_gemm__neon_8x8(size_t mr, size_t nc, size_t kc, const float* a, const float* b, size_t b_stride, float* c,
                        size_t c_stride, uint32_t flags, const F32GemmEpilogue& ep);
void f32_gemm__neon_1x8(size_t mr, size_t nc, size_t kc, const float* a, const float* b, size_t b_stride, float* c,
                        size_t c_stride, uint32_t flags, const F32GemmEpilogue& ep);
#endif

// ---- Configuration (chosen per ISA, once) ------------------------------------------------------

struct F32GemmConfig {
  const char* name = "";    // e.g. "avx2_6x16"
  Isa isa = Isa::kScalar;
  size_t mr = 0;            // rows of `ukernel`; A panels are mr high
  size_t nr = 0;            // columns of both kernels; B is packed in nr-wide panels
  F32GemmUkernelFn ukernel = nullptr;    // mr x nr
  F32GemmUkernelFn ukernel_1 = nullptr;  // 1 x nr, for the M % mr tail rows
  // Cache blocking (see f32_gemm_config.cpp for how they follow from the cache sizes):
  size_t kc = 0;  // K block: a kc x nr B micro-panel stays in L1 while A panels stream past it
  size_t mc = 0;  // M block (multiple of mr): the packed mc x kc A block stays in L2
  size_t nc = 0;  // N block (multiple of nr): the kc x nc slice of packed B stays in this core's L3 share
};

// The configuration for `isa`, or nullptr if isa_supported(isa) is false. Stable address.
const F32GemmConfig* f32_gemm_config(Isa isa);
// The configuration for selected_isa(): what production callers use.
const F32GemmConfig& f32_gemm_config();
// Every configuration this CPU runs: each ISA's primary and its variants (another MR with the
// same NR and B layout, e.g. avx512_8x32 beside avx512_12x32). Stable addresses.
std::vector<const F32GemmConfig*> f32_gemm_configs();
// The selected ISA's configuration (primary or variant) that computes m rows soonest in a GEMM
// of n columns (0: unknown): rows padded to its MR over its rate per row. With n of four NR
// panels or more the FMAs bound the kernel and the 8-row AVX-512 variant computes a row at 0.9 of
// the 12-row primary's rate, so it takes 16, 32 or 64 rows and the primary 128 or 512 (padded to
// 132, 516); with fewer or unknown columns the fewest padded rows win (ties: the primary). Never
// pads more than the primary. Callers that pack A themselves (weights as A) use its mr and
// ukernel; B packed for f32_gemm_config() suits it (same NR).
const F32GemmConfig& f32_gemm_config_for_rows(size_t m, size_t n = 0);

// ---- Packing ----------------------------------------------------------------------------------

// Number of floats f32_gemm_pack_b writes for a k x n B and panel width nr.
size_t f32_gemm_packed_b_size(size_t k, size_t n, size_t nr);

// Packs B (B[kk][j] = b[kk*b_k_stride + j*b_n_stride]) for cfg's K blocks and NR-wide panels,
// K block by K block: block k0 (kb = min(cfg.kc, k - k0) rows) starts at k0 * n_pad (n_pad =
// n rounded up to NR), its panel p at + p * kb * NR, holding columns [p*NR, p*NR+NR) K-major:
// [kk * NR + jj], zero for columns >= n. Every K block of every panel is then contiguous with
// the next panel's, so the driver, which sweeps all panels per K block, streams B in address
// order (the hardware prefetcher keeps up even when B comes from DRAM). The driver must run with
// a configuration of the same NR and KC (the MR variants of an ISA share both).
// ONNX Gemm B (K x N row-major): strides (n, 1); with transB, or Conv weights [N][K][1][1]:
// strides (1, k).
void f32_gemm_pack_b(const F32GemmConfig& cfg, size_t k, size_t n, const float* b, size_t b_k_stride,
                     size_t b_n_stride, float* packed);

// Packs `rows` <= mr rows and kc columns of A (A[i][kk] = a[i*a_row_stride + kk*a_col_stride])
// into one panel: packed[kk*mr + r], zero for rows >= `rows`. Writes kc*mr floats.
void f32_gemm_pack_a(size_t mr, size_t rows, size_t kc, const float* a, size_t a_row_stride, size_t a_col_stride,
                     float* packed);

// ---- Driver -------------------------------------------------------------------------------------

struct F32GemmArgs {
  size_t m = 0, n = 0, k = 0;
  const float* a = nullptr;  // A[i][kk] = a[i*a_row_stride + kk*a_col_stride]
  size_t a_row_stride = 0;
  size_t a_col_stride = 1;
  const float* b_packed = nullptr;  // f32_gemm_pack_b(cfg, k, n, ...) output
  // Optional, for m <= cfg.mc: all of A already in the driver's layout, and then `a` is not read.
  // K block k0 (kb = min(cfg.kc, k - k0) columns) at a_packed + k0 * m: the full MR-row panels
  // ([kk * mr + r], one per mr rows), then each of the m % mr last rows alone ([kk]), each
  // kb * (its rows) floats. Callers that build A themselves (an im2col) write it there once
  // instead of every task packing its own copy.
  const float* a_packed = nullptr;
  float* c = nullptr;               // C[i][j] = c[i*c_stride + j]
  size_t c_stride = 0;
  const float* bias = nullptr;      // [n], or nullptr
  const float* residual = nullptr;  // R[i][j] = residual[i*residual_stride + j], or nullptr;
  size_t residual_stride = 0;       //   may be c itself (C += A*B) with residual_stride == c_stride
  float min = -std::numeric_limits<float>::infinity();
  float max = std::numeric_limits<float>::infinity();
};

// Bytes of per-thread workspace f32_gemm/f32_gemm_task need for this config and K.
size_t f32_gemm_workspace_size(const F32GemmConfig& cfg, size_t k);

// Computes C rows [m0, m1) x columns [n0, n1) (m0 <= m1 <= m, n0 <= n1 <= n, n0 % cfg.nr == 0).
// `workspace`: f32_gemm_workspace_size(cfg, k) bytes private to the calling thread.
void f32_gemm(const F32GemmConfig& cfg, const F32GemmArgs& args, size_t m0, size_t m1, size_t n0, size_t n1,
              void* workspace);

using F32GemmTasks = GemmTasks;  // kernels/gemm_tasks.h

// Splits an m x n output (inner dimension k) into tasks for `threads` workers: gemm_tasks with
// GemmSplit::kFewestReads (M ranges while there is a row tile per task, else the split that
// re-reads the fewest elements of A and B). One task when threads <= 1.
F32GemmTasks f32_gemm_tasks(const F32GemmConfig& cfg, size_t m, size_t n, size_t k, size_t threads);

// Runs task `index` (< tasks.count()) of `tasks`; see f32_gemm for `workspace`.
void f32_gemm_task(const F32GemmConfig& cfg, const F32GemmArgs& args, const F32GemmTasks& tasks, size_t index,
                   void* workspace);

}  // namespace nfuse::kernels
