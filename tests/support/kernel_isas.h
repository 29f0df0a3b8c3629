// The ISAs a kernel test runs its variants on: every one this binary has kernels for and this CPU
// runs, scalar first.
#pragma once

#include <vector>

#include "kernels/cpu_features.h"

namespace nfuse::test {

inline std::vector<kernels::Isa> available_isas() {
  std::vector<kernels::Isa> isas;
  for (kernels::Isa isa : {kernels::Isa::kScalar, kernels::Isa::kAvx2Fma, kernels::Isa::kAvx512, kernels::Isa::kNeon}) {
    if (kernels::isa_supported(isa)) isas.push_back(isa);
  }
  return isas;
}

}  // namespace nfuse::test
