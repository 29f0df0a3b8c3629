// Reference com.microsoft.MatMulNBits (4-bit blockwise weights; layout in ops/matmul_nbits.cpp).
// Each weight is dequantized as ONNX Runtime does, (q - zp) * scale in f32, and the product
// then accumulates in double like the reference MatMul, so the only difference from ORT's f32
// kernel (accuracy_level unset) is its f32 accumulation order.
#include <string>
#include <vector>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"

namespace nfuse::backends::ref {
namespace {

Status matmul_nbits(KernelArgs& a) {
  const int64_t k = a.attrs().get_int("K", 0), n = a.attrs().get_int("N", 0);
  const int64_t block = a.attrs().get_int("block_size", 0);
  if (a.attrs().get_int("bits", 4) != 4 || block < 16) return a.error("only bits=4 with block_size >= 16");
  if (a.has_in(4)) return a.error("g_idx is not supported");
  const int64_t blocks = (k + block - 1) / block, blob = block / 2, zp_stride = (blocks + 1) / 2;
  const ir::Tensor& at = a.in(0);
  if (at.rank() < 1 || at.dims().back() != k) return a.error("A's last dim must be K");
  if (a.in(1).numel() != n * blocks * blob || a.in(2).numel() != n * blocks) {
    return a.error("B or scales do not match K, N and block_size");
  }
  const uint8_t* zp = nullptr;
  if (a.has_in(3)) {
    if (a.in(3).dtype() != ir::DType::kU8 || a.in(3).numel() != n * zp_stride) {
      return a.error("zero_points must be u8 with N * ceil(n_blocks / 2) elements");
    }
    zp = a.in(3).data<uint8_t>();
  }
  const float* bias = nullptr;
  if (a.has_in(5)) {
    if (a.in(5).numel() != n) return a.error("bias must have N elements");
    bias = a.in(5).data<float>();
  }
  const uint8_t* q = a.in(1).data<uint8_t>();
  const float* scales = a.in(2).data<float>();

  // w[kk * n + j] = W[kk][j], in f32 as ORT computes it.
  std::vector<float> w(static_cast<size_t>(k * n));
  for (int64_t j = 0; j < n; ++j)
    for (int64_t kk = 0; kk < k; ++kk) {
      const int64_t b = kk / block, in_block = kk % block;
      const uint8_t byte = q[(j * blocks + b) * blob + in_block / 2];
      const int code = (in_block % 2 == 0) ? (byte & 0x0F) : (byte >> 4);
      int zero = 8;
      if (zp) {
        const uint8_t zbyte = zp[j * zp_stride + b / 2];
        zero = (b % 2 == 0) ? (zbyte & 0x0F) : (zbyte >> 4);
      }
      w[static_cast<size_t>(kk * n + j)] = static_cast<float>(code - zero) * scales[j * blocks + b];
    }

  const int64_t m = k == 0 ? 0 : at.numel() / k;
  const float* x = at.data<float>();
  float* y = a.out(0).data<float>();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (int64_t kk = 0; kk < k; ++kk) acc += double{x[i * k + kk]} * double{w[static_cast<size_t>(kk * n + j)]};
      if (bias) acc += double{bias[j]};
      y[i * n + j] = static_cast<float>(acc);
    }
  return ok_status();
}

}  // namespace

void register_matmul_nbits_kernels(KernelRegistry& registry) { registry.add("MatMulNBits", matmul_nbits); }

}  // namespace nfuse::backends::ref
