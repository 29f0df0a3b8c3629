// Reference NonMaxSuppression: runs the shared algorithm (ops/non_max_suppression.h) and writes
// the selected (batch, class, box) triples into the [num_selected, 3] output infer sized.
#include <string>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"
#include "ops/non_max_suppression.h"

namespace nfuse::backends::ref {
namespace {

Status non_max_suppression_kernel(KernelArgs& a) {
  NFUSE_ASSIGN_OR_RETURN(const auto selected, ops::non_max_suppression(a.node, a.inputs));
  ir::Tensor& out = a.out(0);
  if (out.dtype() != ir::DType::kI64 || out.numel() != static_cast<int64_t>(selected.size()) * 3) {
    return internal_error(a.node.label() + ": output " + ir::dims_to_string(out.dims()) + " does not hold " +
                          std::to_string(selected.size()) + " selected boxes");
  }
  int64_t* o = out.data<int64_t>();
  for (const auto& s : selected) {
    for (int64_t v : s) *o++ = v;
  }
  return ok_status();
}

}  // namespace

void register_non_max_suppression_kernels(KernelRegistry& registry) {
  registry.add("NonMaxSuppression", non_max_suppression_kernel);
}

}  // namespace nfuse::backends::ref
