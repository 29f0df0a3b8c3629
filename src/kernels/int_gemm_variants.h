// The variant set the integer GEMM families (qu8-gemm, qs16-gemm) share: one config per ISA
// (scalar, AVX2, AVX-512 VNNI, NEON), which of them this CPU runs, and the selection rule: an
// AVX-512 machine without VNNI takes the AVX2 kernels. Each family fills the set once; these
// functions answer config(isa), the selected config and the list tests iterate.
#pragma once

#include <vector>

#include "kernels/cpu_features.h"

namespace nfuse::kernels {

template <typename Config>
struct IntGemmVariants {
  Config scalar, avx2, avx512vnni, neon;
  bool has_avx2 = false, has_avx512vnni = false, has_neon = false;

  // The config for `isa`, or nullptr when this CPU cannot run one.
  const Config* for_isa(Isa isa) const {
    switch (isa) {
      case Isa::kScalar:
        return &scalar;
      case Isa::kAvx2Fma:
        return has_avx2 ? &avx2 : nullptr;
      case Isa::kAvx512:
        if (has_avx512vnni) return &avx512vnni;
        return isa_supported(Isa::kAvx512) && has_avx2 ? &avx2 : nullptr;
      case Isa::kNeon:
        return has_neon ? &neon : nullptr;
    }
    return nullptr;
  }

  // The config for the ISA the runtime selected (scalar when it has none).
  const Config& selected() const {
    const Config* c = for_isa(selected_isa());
    return c != nullptr ? *c : scalar;
  }

  // Every config this CPU runs, scalar first.
  std::vector<const Config*> all() const {
    std::vector<const Config*> out{&scalar};
    if (has_avx2) out.push_back(&avx2);
    if (has_avx512vnni) out.push_back(&avx512vnni);
    if (has_neon) out.push_back(&neon);
    return out;
  }
};

}  // namespace nfuse::kernels
