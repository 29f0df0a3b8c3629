// Reference nfuse.Gelu (ops/gelu.cpp): exact (Erf) or tanh-approximated, in double.
#include <cmath>
#include <numbers>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_elementwise_util.h"

namespace nfuse::backends::ref {
namespace {

Status gelu(KernelArgs& a) {
  if (a.attrs().get_string("approximate", "none") == "tanh") {
    const double k = std::sqrt(2.0 / std::numbers::pi);
    return map_float(a, [k](double x) { return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x))); });
  }
  return map_float(a, [](double x) { return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2)); });
}

}  // namespace

void register_gelu_kernels(KernelRegistry& registry) { registry.add("Gelu", gelu); }

}  // namespace nfuse::backends::ref
