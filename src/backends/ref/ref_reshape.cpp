// Reshape, Flatten, Squeeze, Unsqueeze: the output has the input's elements in the same order
// (a copy, or nothing when the planner gave both one buffer).
#include <cstring>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"

namespace nfuse::backends::ref {
namespace {

Status copy_data(KernelArgs& a) {
  if (a.in(0).numel() != a.out(0).numel() || a.in(0).dtype() != a.out(0).dtype()) {
    return a.error("output does not hold the input's elements");
  }
  // The planner may give input and output one buffer (Backend::aliases_reshapes): nothing to copy.
  if (a.in(0).bytes() && a.out(0).raw() != a.in(0).raw()) std::memcpy(a.out(0).raw(), a.in(0).raw(), a.in(0).bytes());
  return ok_status();
}

}  // namespace

void register_reshape_kernels(KernelRegistry& registry) {
  registry.add("Reshape", copy_data);
  registry.add("Flatten", copy_data);
  registry.add("Squeeze", copy_data);
  registry.add("Unsqueeze", copy_data);
}

}  // namespace nfuse::backends::ref
