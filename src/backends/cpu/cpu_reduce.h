// Row reductions written so GCC -O3 vectorises them without -ffast-math: float additions may not
// be reordered, so each keeps kReduceLanes independent partial sums (one vector's worth) and
// folds them at the end.
#pragma once

#include <cstddef>

namespace nfuse::backends::cpu {

inline constexpr size_t kReduceLanes = 16;

inline float lane_sum(const float* x, size_t n) {
  float acc[kReduceLanes] = {};
  size_t i = 0;
  for (; i + kReduceLanes <= n; i += kReduceLanes)
    for (size_t j = 0; j < kReduceLanes; ++j) acc[j] += x[i + j];
  float s = 0.0f;
  for (; i < n; ++i) s += x[i];
  for (size_t j = 0; j < kReduceLanes; ++j) s += acc[j];
  return s;
}

}  // namespace nfuse::backends::cpu
