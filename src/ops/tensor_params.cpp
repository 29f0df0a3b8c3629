#include "ops/tensor_params.h"

#include <algorithm>
#include <limits>

namespace nfuse::ops {

std::optional<std::vector<int64_t>> ints_from_attr_or_input(const ir::Attributes& attrs,
                                                            const std::string& attr,
                                                            const ir::Tensor* input) {
  if (attrs.has(attr)) return attrs.get_ints(attr);
  if (input) return input->to_int_vector();
  return std::nullopt;
}

static Status check_count(const std::vector<int64_t>& known) {
  int64_t n = 1;
  for (int64_t d : known) {
    if (d < 0) return invalid_model("negative dimension " + std::to_string(d));
    if (d == 0) return ok_status();
  }
  for (int64_t d : known) {
    if (n > kMaxElements / d) {
      return invalid_model("output would have more than 2^40 elements (" + ir::dims_to_string(known) + ")");
    }
    n *= d;
  }
  return ok_status();
}

Status check_dims(const std::vector<int64_t>& dims) { return check_count(dims); }

Status check_shape(const ir::Shape& shape) {
  std::vector<int64_t> known;
  for (const ir::Dim& d : shape.dims())
    if (d.is_static()) known.push_back(d.value);
  return check_count(known);
}

std::string axis_error(int64_t axis, int rank) {
  return "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank);
}

std::optional<std::vector<int>> normalize_axes(const std::vector<int64_t>& axes, int rank,
                                               std::string* error, bool allow_repeats) {
  std::vector<int> out;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) {
      *error = axis_error(a, rank);
      return std::nullopt;
    }
    const int n = static_cast<int>(a < 0 ? a + rank : a);
    if (seen[static_cast<size_t>(n)] && !allow_repeats) {
      *error = "axis " + std::to_string(a) + " is repeated";
      return std::nullopt;
    }
    seen[static_cast<size_t>(n)] = true;
    out.push_back(n);
  }
  return out;
}

// Elements start, start+step, ... strictly before end (step > 0) or after it (step < 0),
// with start and end already clamped to [-1, dim].
static int64_t slice_count(int64_t start, int64_t end, int64_t step) {
  if (step > 0) return end > start ? (end - start - 1) / step + 1 : 0;
  // -step overflows for INT64_MIN; any step beyond the span takes a single element anyway.
  const int64_t mag = step == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -step;
  return start > end ? (start - end - 1) / mag + 1 : 0;
}

Result<std::vector<SliceAxis>> compute_slice(const std::vector<int64_t>& dims,
                                             const std::vector<int64_t>& starts,
                                             const std::vector<int64_t>& ends,
                                             std::optional<std::vector<int64_t>> axes,
                                             std::optional<std::vector<int64_t>> steps) {
  const int rank = static_cast<int>(dims.size());
  if (starts.size() != ends.size()) return invalid_model("starts and ends have different lengths");
  if (!axes) {
    if (starts.size() > dims.size()) return invalid_model("more starts than input dims");
    axes.emplace();
    for (size_t i = 0; i < starts.size(); ++i) axes->push_back(static_cast<int64_t>(i));
  }
  if (!steps) steps.emplace(starts.size(), 1);
  if (axes->size() != starts.size() || steps->size() != starts.size()) {
    return invalid_model("starts, ends, axes and steps must have the same length");
  }
  std::string err;
  auto norm = normalize_axes(*axes, rank, &err);
  if (!norm) return invalid_model(err);
  std::vector<SliceAxis> out;
  for (size_t i = 0; i < starts.size(); ++i) {
    SliceAxis s;
    s.axis = (*norm)[i];
    s.step = (*steps)[i];
    if (s.step == 0) return invalid_model("slice step must not be 0");
    const int64_t dim = dims[static_cast<size_t>(s.axis)];
    if (dim <= 0) {  // unknown, or empty: nothing to clamp against
      if (dim == 0) s.count = 0;
      out.push_back(s);
      continue;
    }
    int64_t start = starts[i];
    int64_t end = ends[i];
    // Negative indices count from the end; both are in [-2^63, 2^63) so adding dim is safe.
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    if (s.step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
    }
    s.start = start;
    s.count = slice_count(start, end, s.step);
    out.push_back(s);
  }
  return out;
}

Result<std::vector<int64_t>> compute_split(int64_t dim, int n_outputs,
                                           const std::optional<std::vector<int64_t>>& split) {
  if (n_outputs < 1) return invalid_model("Split needs at least one output");
  if (split) {
    if (static_cast<int>(split->size()) != n_outputs) {
      return invalid_model("split has " + std::to_string(split->size()) + " entries for " +
                           std::to_string(n_outputs) + " outputs");
    }
    int64_t sum = 0;
    for (int64_t s : *split) {
      if (s < 0) return invalid_model("split sizes must not be negative");
      if (s > std::numeric_limits<int64_t>::max() - sum) return invalid_model("split sizes overflow");
      sum += s;
    }
    if (dim >= 0 && sum != dim) {
      return invalid_model("split sizes sum to " + std::to_string(sum) + " but the dim is " +
                           std::to_string(dim));
    }
    return *split;
  }
  if (dim < 0) return std::vector<int64_t>(static_cast<size_t>(n_outputs), -1);
  if (dim % n_outputs != 0) {
    return invalid_model("dim " + std::to_string(dim) + " cannot be split into " +
                         std::to_string(n_outputs) + " equal parts");
  }
  return std::vector<int64_t>(static_cast<size_t>(n_outputs), dim / n_outputs);
}

}  // namespace nfuse::ops

namespace nfuse::ops {

Result<ir::Tensor> constant_value(const ir::Node& node) {
  const ir::Attributes& a = node.attrs;
  int given = 0;
  for (const char* name : {"value", "value_float", "value_floats", "value_int", "value_ints", "sparse_value",
                           "value_string", "value_strings"}) {
    given += a.has(name) ? 1 : 0;
  }
  if (given != 1) return invalid_model(node.label() + ": needs exactly one value attribute");
  if (const ir::Tensor* t = a.get_tensor("value")) return *t;
  if (a.has("value_float")) return ir::Tensor::from_vector(std::vector<float>{a.get_float("value_float", 0)}, {});
  if (a.has("value_int")) return ir::Tensor::from_vector(std::vector<int64_t>{a.get_int("value_int", 0)}, {});
  if (a.has("value_floats")) {
    std::vector<float> v = a.get_floats("value_floats");
    const auto n = static_cast<int64_t>(v.size());
    return ir::Tensor::from_vector(v, {n});
  }
  if (a.has("value_ints")) {
    std::vector<int64_t> v = a.get_ints("value_ints");
    const auto n = static_cast<int64_t>(v.size());
    return ir::Tensor::from_vector(v, {n});
  }
  if (a.has("value")) return invalid_model(node.label() + ": attribute 'value' is not a tensor");
  return unsupported(node.label() + ": sparse and string constants are not supported");
}

}  // namespace nfuse::ops
