// Factories for the cpu backend's com.microsoft quantized element-wise ops (QLinearAdd,
// QLinearMul, QLinearConcat, QLinearGlobalAveragePool), bit-exact with their reference kernels
// (arithmetic in kernels/quant_arithmetic.h). Like every cpu factory: nullptr (not an error)
// when the node is outside what the optimised path covers, and the reference kernel runs it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/cpu_op.h"

namespace nfuse::backends::cpu {

// QLinearAdd / QLinearMul on u8 or i8 with constant per-tensor scales and zero points and finite
// multipliers; any numpy broadcast (contiguous runs of the output where each operand is either
// contiguous or one repeated value), on the q8-vbinary kernels (cpu_qlinear_binary.cpp). On u16
// or i16 (nfuse's 16-bit form) the same runs, on the q-dequant and f32-qvcvt kernels.
Result<std::unique_ptr<CpuOp>> make_qlinear_binary(const ir::Node& node, const CompileContext& ctx);
// QLinearConcat with constant per-tensor parameters: rows copied where an input's parameters
// equal the output's, requantized through a 256-entry table (x8-lut) otherwise (cpu_qlinear_concat.cpp).
Result<std::unique_ptr<CpuOp>> make_qlinear_concat(const ir::Node& node, const CompileContext& ctx);
// One QLinearConcat input's requantization to the output's parameters: a plain copy when they
// are equal, else table[byte] = quantize(dequantize(byte)), the very values ref computes.
struct QConcatInput {
  bool copy = true;
  uint8_t table[256] = {};
};
// "" with Y's type (u8 / i8, Y_zero_point's) and every input's requantization when QLinearConcat
// `node` has constant one-element scales and zero points of one 8-bit type; else why not. The
// inputs' own types are the caller's to check.
std::string qlinear_concat_inputs(const ir::Node& node, ir::DType* y_type, std::vector<QConcatInput>* inputs);
// QLinearGlobalAveragePool, channels_last = 0, constant per-tensor parameters (q8-rsum row sums),
// and MaxPool of a 4-D u8 / i8 tensor without Indices (cpu_qlinear_pool.cpp).
Result<std::unique_ptr<CpuOp>> make_qlinear_pool(const ir::Node& node, const CompileContext& ctx);

}  // namespace nfuse::backends::cpu
