// TopK's order, shared by every TopK kernel (ref and cpu alike) so both pick the same elements:
// NaN counts as larger than every number (and equal to another NaN), ties go to the smaller index.
#pragma once

#include <cmath>
#include <type_traits>

namespace nfuse::ops {

template <typename C>
bool topk_greater(C x, C y) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(x)) return !std::isnan(y);
    if (std::isnan(y)) return false;
  }
  return x > y;
}

}  // namespace nfuse::ops
