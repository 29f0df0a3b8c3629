// Weight-only int4 quantization (`nfuse quantize --weights int4`): every MatMul whose B is a
// constant f32 [K, N] matrix becomes ONNX Runtime's com.microsoft.MatMulNBits with 4-bit
// blockwise weights, one scale (and, asymmetric, one zero point) per block of `block_size`
// consecutive k in each output column, as onnxruntime.quantization.matmul_4bits_quantizer's
// default (RTN) quantizer writes it: the same weights give the same bytes, so the model runs on
// ORT and on nfuse with identical dequantized weights. No calibration data is needed.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "nfuse/status.h"

namespace nfuse::quant {

// The packed MatMulNBits operands of one f32 [K, N] weight (layout in ops/matmul_nbits.cpp).
struct Int4Weights {
  std::vector<uint8_t> codes;        // [N, n_blocks, block_size / 2]
  std::vector<float> scales;         // [N * n_blocks]
  std::vector<uint8_t> zero_points;  // [N * ceil(n_blocks / 2)]; empty when symmetric
};

// Quantizes row-major w[K][N] blockwise along K. Symmetric: scale = -v / 8 with v the block's
// value of largest magnitude (its sign kept, so that value maps to code 0 = -8), zero point 8.
// Asymmetric: the block's range widened to include 0, scale = range / 15, zero point rounded
// (ORT's MLAS range2scale / range2scalezp). Codes: clamp(roundf(w / scale + zp), 0, 15).
Int4Weights quantize_int4_blockwise(const float* w, int64_t k, int64_t n, int64_t block_size, bool symmetric);

// Replaces every top-level MatMul with an f32 A and a constant 2-D f32 B (and no fused
// epilogue) by MatMulNBits (bits 4, `block_size`), likewise every Gemm with transA 0, alpha and
// beta 1, a constant B and a constant [N] bias or none (the bias becomes MatMulNBits' input 5),
// and declares the com.microsoft opset. A MatMul's following Add of a constant [N] bias (its
// only consumer) is absorbed as that bias, so the GEMM adds it. Run it after constant folding so that weights reached
// through Transpose / Identity are constants. Returns how many nodes were replaced;
// kInvalidArgument when block_size is not a power of 2 >= 16.
Result<int> quantize_matmul_weights_int4(ir::Graph& g, int64_t block_size, bool symmetric);

}  // namespace nfuse::quant
