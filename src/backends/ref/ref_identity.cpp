#include <cstring>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"

namespace nfuse::backends::ref {
namespace {

Status identity(KernelArgs& a) {
  if (a.in(0).bytes()) std::memcpy(a.out(0).raw(), a.in(0).raw(), a.in(0).bytes());
  return ok_status();
}

Status dropout(KernelArgs& a) {
  const double ratio = a.has_in(1) && a.in(1).numel() == 1 ? a.in(1).get_double(0) : 0.5;
  if (a.has_in(2) && a.in(2).numel() == 1 && a.in(2).get_double(0) != 0 && ratio != 0.0) {
    return a.error("training_mode=true (random dropout) is not supported for inference");
  }
  NFUSE_RETURN_IF_ERROR_PLAIN(identity(a));
  if (a.num_outputs() > 1) {
    bool* mask = a.out(1).data<bool>();
    for (int64_t i = 0; i < a.out(1).numel(); ++i) mask[i] = true;
  }
  return ok_status();
}

}  // namespace

void register_identity_kernels(KernelRegistry& registry) {
  registry.add("Identity", identity);
  registry.add("Dropout", dropout);
}

}  // namespace nfuse::backends::ref
