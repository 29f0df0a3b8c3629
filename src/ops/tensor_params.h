// Parameter resolution shared by the tensor-manipulation op schemas (src/ops) and their
// reference kernels (src/backends/ref): both sides must agree exactly on what a Slice, Pad or
// Split means, so the arithmetic lives here once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/attributes.h"
#include "ir/graph.h"
#include "ir/dtype.h"
#include "ir/shape.h"
#include "ir/tensor.h"
#include "nfuse/status.h"

namespace nfuse::ops {

// The largest element count a tensor op may produce: beyond this a hostile attribute or input
// (huge pads, repeats, Range limits) is rejected instead of attempting the allocation.
inline constexpr int64_t kMaxElements = int64_t{1} << 40;

// An int list given either by attribute `attr` (older opsets) or by an input tensor (newer
// opsets). The attribute wins when present; nullopt when neither is available.
std::optional<std::vector<int64_t>> ints_from_attr_or_input(const ir::Attributes& attrs,
                                                            const std::string& attr,
                                                            const ir::Tensor* input);

// Checks concrete output dims: none negative, element count at most kMaxElements.
Status check_dims(const std::vector<int64_t>& dims);
// Same for a Shape: checks only the static dims and the static part of the product.
Status check_shape(const ir::Shape& shape);


// "axis A is out of range for rank R", the message for every bad axis attribute.
std::string axis_error(int64_t axis, int rank);

// Normalises a list of axes against `rank`; kInvalidModel text in `error` when one is out of
// range or (unless allow_repeats) repeated.
std::optional<std::vector<int>> normalize_axes(const std::vector<int64_t>& axes, int rank,
                                               std::string* error, bool allow_repeats = false);

// One sliced axis: output element j along `axis` reads input element start + j * step.
struct SliceAxis {
  int axis = 0;
  int64_t start = 0;
  int64_t step = 1;
  int64_t count = -1;  // -1 when the input dim is unknown
};

// ONNX Slice semantics (negative indices, clamping, negative steps). `dims` may hold -1 for
// unknown dims (count -1 there). Errors: length mismatch, bad or repeated axes, zero step.
Result<std::vector<SliceAxis>> compute_slice(const std::vector<int64_t>& dims,
                                             const std::vector<int64_t>& starts,
                                             const std::vector<int64_t>& ends,
                                             std::optional<std::vector<int64_t>> axes,
                                             std::optional<std::vector<int64_t>> steps);

// Split sizes along a dim of size `dim` (-1 unknown) into `n_outputs` parts: the explicit
// `split` list (must sum to dim when dim is known) or equal parts (dim divisible by n_outputs).
// Entries are -1 where unknown.
Result<std::vector<int64_t>> compute_split(int64_t dim, int n_outputs,
                                           const std::optional<std::vector<int64_t>>& split);

}  // namespace nfuse::ops

namespace nfuse::ops {

// The tensor a Constant node produces, from whichever of value / value_float(s) /
// value_int(s) it carries. kUnsupported for sparse_value and string values.
Result<ir::Tensor> constant_value(const ir::Node& node);

}  // namespace nfuse::ops
