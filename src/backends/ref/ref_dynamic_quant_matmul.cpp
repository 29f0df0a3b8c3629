// Reference nfuse.DynamicQuantMatMul (ops/dynamic_quant_matmul.cpp): the graph it replaces, step
// by step — DynamicQuantizeLinear over all of x, the exact integer product of (xq - xzp) and
// (w - w_zp[j]) (int64, kept as int32 like MatMulInteger's output), its f32 value times the f32
// product x_scale * w_scale[j], plus bias[j].
#include <algorithm>
#include <cstdint>
#include <vector>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"
#include "backends/ref/ref_nn_util.h"
#include "kernels/quant_arithmetic.h"

namespace nfuse::backends::ref {
namespace {

Status dynamic_quant_matmul(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  const ir::Tensor& w = a.in(1);
  const ir::Tensor& wzp = a.in(2);
  const ir::Tensor& ws = a.in(3);
  if (x.dtype() != ir::DType::kF32 || x.rank() < 2 || w.rank() != 2) return a.error("expects f32 x and a matrix w");
  const int64_t k = w.dim(0), n = w.dim(1);
  if (x.dims().back() != k) return a.error("x's last dim does not match w's K");
  if ((wzp.numel() != 1 && wzp.numel() != n) || (ws.numel() != 1 && ws.numel() != n)) {
    return a.error("w_zero_point and w_scale must have 1 or N elements");
  }
  if (a.has_in(4) && a.in(4).numel() != n) return a.error("bias must have N elements");
  const float* xv = x.data<float>();
  const int64_t m = x.numel() / std::max<int64_t>(k, 1);
  DynamicQuantParams q;
  const std::vector<int64_t> xq = dynamic_quantized_centered(xv, static_cast<size_t>(x.numel()), &q);
  const float* scale = ws.data<float>();
  const float* bias = a.has_in(4) ? a.in(4).data<float>() : nullptr;
  float* y = a.out(0).data<float>();
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const int64_t zp = wzp.get_int(wzp.numel() == 1 ? 0 : j);
      int64_t acc = 0;
      for (int64_t p = 0; p < k; ++p) acc += xq[static_cast<size_t>(i * k + p)] * (w.get_int(p * n + j) - zp);
      const float s = q.scale * scale[ws.numel() == 1 ? 0 : j];
      float v = static_cast<float>(static_cast<int32_t>(acc)) * s;
      if (bias) v += bias[j];
      y[i * n + j] = v;
    }
  }
  return ok_status();
}

}  // namespace

void register_dynamic_quant_matmul_kernels(KernelRegistry& registry) {
  registry.add("DynamicQuantMatMul", dynamic_quant_matmul);
}

}  // namespace nfuse::backends::ref
