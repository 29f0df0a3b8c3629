// Einsum equations: parsing shared by the schema and the kernels.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "ir/shape.h"
#include "nfuse/status.h"

namespace nfuse::ops {

// An equation with every dim of every operand named by a label id. Letters get ids 0..51;
// the dims an ellipsis stands for get ids 52.. (right-aligned across operands, so they broadcast
// like numpy). Output labels follow "->", or implicitly: ellipsis dims, then the letters that
// appear exactly once, in alphabetical order.
struct EinsumSpec {
  int num_labels = 0;
  std::vector<std::vector<int>> inputs;  // per operand, per dim
  std::vector<int> output;
};

// kInvalidModel for malformed equations, an operand count or rank that does not match, or an
// output label that no operand has.
Result<EinsumSpec> parse_einsum(std::string_view equation, const std::vector<int>& input_ranks);

// The size of every label: operands agree on it, except that ellipsis dims of size 1 broadcast.
Result<std::vector<int64_t>> einsum_label_sizes(const EinsumSpec& spec,
                                                const std::vector<std::vector<int64_t>>& input_dims);

}  // namespace nfuse::ops
