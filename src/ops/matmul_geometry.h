// numpy-matmul shape rules shared by MatMul, MatMulInteger and QLinearMatMul (and the backends
// that implement them): 1-D operands are promoted (A to [1, K], B to [K, 1]) and the promoted
// dim dropped from the result; batch dims broadcast.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/shape.h"
#include "nfuse/status.h"

namespace nfuse::ops {

// Output shape of a matmul of shapes a and b; dims that are not known stay unknown.
// kInvalidModel for rank-0 operands, mismatched K or batch dims that cannot broadcast.
Result<ir::Shape> matmul_shape(const ir::Shape& a, const ir::Shape& b);

// A matmul resolved against concrete dims.
struct MatMulGeometry {
  int64_t m = 1, k = 1, n = 1;
  std::vector<int64_t> batch;     // broadcast batch dims
  std::vector<int64_t> out_dims;  // Y's dims
  // For every batch index (row-major over `batch`), the index of the A and B matrix it reads.
  std::vector<int64_t> a_matrix, b_matrix;
};
Result<MatMulGeometry> resolve_matmul(const std::vector<int64_t>& a_dims, const std::vector<int64_t>& b_dims);

}  // namespace nfuse::ops
