// Reference If: runs the chosen branch through the subgraph runner and hands its results over as
// the outputs (If allocates its own outputs: OpSchema::kernel_allocates_outputs), after checking
// them against what inference knows of each output.
#include <string>
#include <vector>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"

namespace nfuse::backends::ref {
namespace {

Status if_kernel(KernelArgs& a) {
  const ir::Tensor& cond = a.in(0);
  if (cond.numel() < 1) return a.error("cond has no element");
  const bool take_then = cond.get_double(0) != 0.0;
  auto branch = a.attrs().get_graph(take_then ? "then_branch" : "else_branch");
  if (!branch) return a.error("branch graph is missing");
  NFUSE_ASSIGN_OR_RETURN(auto results, a.run_body(*branch, {}));
  if (static_cast<int>(results.size()) != a.num_outputs()) {
    return a.error("branch produced " + std::to_string(results.size()) + " outputs, expected " +
                   std::to_string(a.num_outputs()));
  }
  for (int i = 0; i < a.num_outputs(); ++i) {
    ir::Tensor& r = results[static_cast<size_t>(i)];
    const ir::Value* v = a.node.outputs[static_cast<size_t>(i)];
    if (v != nullptr) {
      const ir::TensorType& t = v->type;
      bool fits = t.dtype == ir::DType::kUndefined || t.dtype == r.dtype();
      if (fits && t.shape.rank_known()) {
        fits = t.shape.rank() == r.rank();
        for (int d = 0; fits && d < t.shape.rank(); ++d)
          fits = !t.shape[d].is_static() || t.shape[d].value == r.dim(d);
      }
      if (!fits) {
        return internal_error(a.node.label() + ": branch output " + std::to_string(i) + " is " +
                              std::string(ir::dtype_name(r.dtype())) + " " + ir::dims_to_string(r.dims()) +
                              " but the graph says " + t.to_string());
      }
    }
    a.out(i) = std::move(r);
  }
  return ok_status();
}

}  // namespace

void register_control_flow_kernels(KernelRegistry& registry) { registry.add("If", if_kernel); }

}  // namespace nfuse::backends::ref
