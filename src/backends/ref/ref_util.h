// Small helpers for reference kernels: scalar conversions for every dtype and broadcasting.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "ir/dtype.h"
#include "ir/tensor.h"

namespace nfuse::backends::ref {

// Value of any element type as double, and back (16-bit floats go through float).
template <typename T>
inline double to_double(T v) {
  if constexpr (std::is_same_v<T, ir::Half>) return ir::half_to_float(v.bits);
  else if constexpr (std::is_same_v<T, ir::BFloat16>) return ir::bf16_to_float(v.bits);
  else return static_cast<double>(v);
}
template <typename T>
inline T from_double(double v) {
  if constexpr (std::is_same_v<T, ir::Half>) return ir::Half{ir::float_to_half(static_cast<float>(v))};
  else if constexpr (std::is_same_v<T, ir::BFloat16>) return ir::BFloat16{ir::float_to_bf16(static_cast<float>(v))};
  else if constexpr (std::is_same_v<T, bool>) return v != 0.0;
  else return static_cast<T>(v);
}
// Compute type for arithmetic on T: float for 16-bit floats, T otherwise.
template <typename T>
using compute_t = std::conditional_t<std::is_same_v<T, ir::Half> || std::is_same_v<T, ir::BFloat16>, float, T>;
template <typename T>
inline compute_t<T> load(T v) {
  if constexpr (std::is_same_v<T, ir::Half>) return ir::half_to_float(v.bits);
  else if constexpr (std::is_same_v<T, ir::BFloat16>) return ir::bf16_to_float(v.bits);
  else return v;
}
template <typename T>
inline T store(compute_t<T> v) {
  if constexpr (std::is_same_v<T, ir::Half>) return ir::Half{ir::float_to_half(v)};
  else if constexpr (std::is_same_v<T, ir::BFloat16>) return ir::BFloat16{ir::float_to_bf16(v)};
  else return v;
}
template <typename T>
inline constexpr bool is_float_v = std::is_floating_point_v<T> || std::is_same_v<T, ir::Half> ||
                                   std::is_same_v<T, ir::BFloat16>;

// Row-major strides of `dims`.
std::vector<int64_t> strides_of(const std::vector<int64_t>& dims);
// True when `in` broadcasts to `out` under numpy rules (rank <= out's, each dim 1 or equal).
bool broadcasts_to(const std::vector<int64_t>& in, const std::vector<int64_t>& out);
// Strides of an input of dims `in` read at every index of an output of dims `out` under numpy
// broadcasting: 0 where the input dim is 1 (or missing), the input's stride otherwise.
// Precondition: broadcasts_to(in, out); for_each_broadcast checks it.
std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in, const std::vector<int64_t>& out);

// Calls fn(out_index, offsets) for every output element, where offsets[k] is the element offset
// into input k under broadcasting. Iterates in row-major order of `out_dims`. Returns false
// (and calls nothing) when an input does not broadcast to `out_dims`, so a shape bug upstream
// can never read out of bounds; kernels check broadcasts_to first to report it.
template <typename Fn>
bool for_each_broadcast(const std::vector<int64_t>& out_dims,
                        const std::vector<std::vector<int64_t>>& in_dims, Fn&& fn) {
  for (const auto& d : in_dims)
    if (!broadcasts_to(d, out_dims)) return false;
  const size_t rank = out_dims.size();
  const size_t n_in = in_dims.size();
  std::vector<std::vector<int64_t>> strides;
  for (const auto& d : in_dims) strides.push_back(broadcast_strides(d, out_dims));
  std::vector<int64_t> index(rank, 0);
  std::vector<int64_t> offsets(n_in, 0);
  const int64_t total = ir::shape_numel(out_dims);
  for (int64_t i = 0; i < total; ++i) {
    fn(i, offsets);
    for (size_t d = rank; d-- > 0;) {
      ++index[d];
      for (size_t k = 0; k < n_in; ++k) offsets[k] += strides[k][d];
      if (index[d] < out_dims[d]) break;
      for (size_t k = 0; k < n_in; ++k) offsets[k] -= strides[k][d] * index[d];
      index[d] = 0;
    }
  }
  return true;
}

}  // namespace nfuse::backends::ref
