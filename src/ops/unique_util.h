// The Unique algorithm, shared by the op's shape inference (which needs the number of unique
// values) and its reference kernel (which needs all of it). Implemented in unique.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/tensor.h"

namespace nfuse::ops {

struct UniqueResult {
  // Per unique slice, in output order: index of its first occurrence in x, and its count.
  std::vector<int64_t> first;
  std::vector<int64_t> counts;
  // Per slice of x: the position of its value in the output.
  std::vector<int64_t> inverse;
};

// Unique elements of x (flattened) when axis is nullopt, else unique slices along `axis`
// (already normalised). sorted: ascending (lexicographic for slices); otherwise in order of
// first occurrence. NaN compares equal to NaN and above every number.
UniqueResult compute_unique(const ir::Tensor& x, std::optional<int> axis, bool sorted);

}  // namespace nfuse::ops
