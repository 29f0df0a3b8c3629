// The FP32 GEMM driver: Goto/BLIS loop nest over the microkernels of one F32GemmConfig.
//
//   for each N block (nc columns)                 B slice kc x nc in this core's L3 share
//     for each K block (kc)                       first block starts from bias, last one finishes
//       for each M block (mc rows): pack A        A block mc x kc in L2
//         for each nr-wide B panel                B micro-panel kc x nr in L1
//           for each mr-high A panel: ukernel     (then 1 x nr ukernel_1 per tail row)
#include <cstdint>

#include "kernels/f32-gemm/f32_gemm.h"

namespace nfuse::kernels {
namespace {

constexpr size_t kWorkspaceAlign = 64;

}  // namespace

size_t f32_gemm_workspace_size(const F32GemmConfig& cfg, size_t k) {
  const size_t kc = k < cfg.kc ? (k > 0 ? k : 1) : cfg.kc;
  return cfg.mc * kc * sizeof(float) + kWorkspaceAlign;
}

void f32_gemm(const F32GemmConfig& cfg, const F32GemmArgs& args, size_t m0, size_t m1, size_t n0, size_t n1,
              void* workspace) {
  if (m0 >= m1 || n0 >= n1) {
    return;
  }
  const size_t mr = cfg.mr;
  const size_t nr = cfg.nr;
  const size_t k = args.k;
  const size_t n_pad = (args.n + nr - 1) / nr * nr;
  float* packed_a = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(workspace) + kWorkspaceAlign - 1) &
                                             ~uintptr_t{kWorkspaceAlign - 1});
  F32GemmEpilogue ep;
  ep.residual_stride = args.residual_stride;
  ep.min = args.min;
  ep.max = args.max;

  for (size_t nb = n0; nb < n1; nb += cfg.nc) {
    const size_t nb_end = n1 - nb < cfg.nc ? n1 : nb + cfg.nc;
    size_t k0 = 0;
    do {  // at least once: k == 0 still writes clamp(bias + residual)
      const size_t kc = k - k0 < cfg.kc ? k - k0 : cfg.kc;
      const uint32_t flags = (k0 > 0 ? kF32GemmLoadC : 0u) | (k0 + kc >= k ? kF32GemmFinal : 0u);
      for (size_t mb = m0; mb < m1; mb += cfg.mc) {
        const size_t rows = m1 - mb < cfg.mc ? m1 - mb : cfg.mc;
        const size_t full = rows / mr * mr;
        const float* panels = packed_a;
        if (args.a_packed != nullptr) {
          // Task ranges start on MR boundaries and only the last one holds the tail rows, so
          // this range's panels and rows sit where the whole matrix's do.
          panels = args.a_packed + k0 * args.m + mb * kc;
        } else {
          const float* a = args.a + mb * args.a_row_stride + k0 * args.a_col_stride;
          for (size_t i = 0; i < full; i += mr) {
            f32_gemm_pack_a(mr, mr, kc, a + i * args.a_row_stride, args.a_row_stride, args.a_col_stride,
                            packed_a + i * kc);
          }
          for (size_t i = full; i < rows; ++i) {
            f32_gemm_pack_a(1, 1, kc, a + i * args.a_row_stride, args.a_row_stride, args.a_col_stride,
                            packed_a + i * kc);
          }
        }
        for (size_t j = nb; j < nb_end; j += nr) {
          const size_t nc = nb_end - j < nr ? nb_end - j : nr;
          const float* b = args.b_packed + k0 * n_pad + j * kc;  // K block k0, panel j/nr
          float* c = args.c + mb * args.c_stride + j;
          ep.bias = args.bias != nullptr ? args.bias + j : nullptr;
          const float* residual =
              args.residual != nullptr ? args.residual + mb * args.residual_stride + j : nullptr;
          for (size_t i = 0; i < full; i += mr) {
            ep.residual = residual != nullptr ? residual + i * args.residual_stride : nullptr;
            // The first row block streams the panel in; it asks for the next one as it goes.
            const uint32_t prefetch = i == 0 ? kF32GemmPrefetchNextPanel : 0u;
            cfg.ukernel(mr, nc, kc, panels + i * kc, b, nr, c + i * args.c_stride, args.c_stride, flags | prefetch, ep);
          }
          for (size_t i = full; i < rows; ++i) {
            ep.residual = residual != nullptr ? residual + i * args.residual_stride : nullptr;
            cfg.ukernel_1(1, nc, kc, panels + i * kc, b, nr, c + i * args.c_stride, args.c_stride, flags, ep);
          }
        }
      }
      k0 += kc;
    } while (k0 < k);
  }
}

F32GemmTasks f32_gemm_tasks(const F32GemmConfig& cfg, size_t m, size_t n, size_t k, size_t threads) {
  return gemm_tasks(cfg.mr, cfg.nr, m, n, k, threads, GemmSplit::kFewestReads);
}

void f32_gemm_task(const F32GemmConfig& cfg, const F32GemmArgs& args, const F32GemmTasks& tasks, size_t index,
                   void* workspace) {
  size_t m0, m1, n0, n1;
  tasks.range(index, args.m, args.n, &m0, &m1, &n0, &n1);
  f32_gemm(cfg, args, m0, m1, n0, n1, workspace);
}

}  // namespace nfuse::kernels
