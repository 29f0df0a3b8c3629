// Helpers shared by the neural-network reference kernels (conv, pool, normalization, matmul,
// quantize). Kernels here convert whole tensors to double, compute and convert back: slow, but
// exact for every integer up to 2^53 and more precise than any float kernel they check.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/tensor.h"
#include "kernels/quant_arithmetic.h"
#include "ops/axis_list.h"

namespace nfuse::backends::ref {

// DynamicQuantizeLinear of x[0, n) (its u8 parameters in *q), each value with the zero point
// subtracted: the centered operand of the integer product that follows it (MatMulInteger,
// ConvInteger). Scale 0 (an all-zero x) quantizes to 0.
std::vector<int64_t> dynamic_quantized_centered(const float* x, size_t n, DynamicQuantParams* q);
// Every element of `t` as double.
std::vector<double> to_doubles(const ir::Tensor& t);
// Every element of an integer tensor as int64 (exact for every integer dtype but u64 >= 2^63).
std::vector<int64_t> to_int64s(const ir::Tensor& t);
// Writes v[i] into element i of `t` (rounded to t's dtype as ir::store_from_double does).
void from_doubles(const std::vector<double>& v, ir::Tensor& t);
// Multi-indices of every element of `dims` in row-major order: entry [i * dims.size() + d].
std::vector<int64_t> all_indices(const std::vector<int64_t>& dims);
// Product of `dims` (1 for none).
int64_t product(const std::vector<int64_t>& dims);
// The same for a window's per-axis lists (ops/axis_list.h).
inline std::vector<int64_t> all_indices(const ops::AxisList& dims) { return all_indices(dims.vector()); }
inline int64_t product(const ops::AxisList& dims) { return product(dims.vector()); }

}  // namespace nfuse::backends::ref
