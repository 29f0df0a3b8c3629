// If: runs then_branch or else_branch (subgraph attributes without inputs) on a bool scalar.
// Output types come from the branches' outputs: from the chosen branch when the condition is
// known, else the agreement of both (dims that differ become unknown). The runtime re-infers
// with the condition known when the merged shape is not static, so inference over the chosen
// branch must give its exact output shapes: it runs shape inference through the branch's nodes.
#include <string>
#include <vector>

#include "ops/builtin_ops.h"
#include "ops/op_helpers.h"
#include "ops/subgraph_infer.h"

namespace nfuse::ops {
namespace {

Status verify_if(const ir::Node& node) {
  for (const char* name : {"then_branch", "else_branch"}) {
    auto g = node.attrs.get_graph(name);
    if (!g) return invalid_model(node.label() + ": graph attribute '" + name + "' is missing");
    if (static_cast<int>(g->outputs().size()) != node.num_outputs()) {
      return invalid_model(node.label() + ": " + name + " has " + std::to_string(g->outputs().size()) +
                           " outputs but the node has " + std::to_string(node.num_outputs()));
    }
    if (!g->inputs().empty()) return invalid_model(node.label() + ": " + name + " must not have inputs");
  }
  return ok_status();
}

ir::Shape merge_shapes(const ir::Shape& a, const ir::Shape& b) {
  if (!a.rank_known() || !b.rank_known() || a.rank() != b.rank()) return ir::Shape::unknown_rank();
  std::vector<ir::Dim> dims;
  for (int i = 0; i < a.rank(); ++i) dims.push_back(a[i] == b[i] ? a[i] : ir::Dim());
  return ir::Shape(std::move(dims));
}

Status infer_if(ir::InferContext& ctx) {
  auto then_g = ctx.attrs().get_graph("then_branch");
  auto else_g = ctx.attrs().get_graph("else_branch");
  if (!then_g || !else_g) return ctx.error("then_branch and else_branch are required");
  if (const ir::Tensor* cond = ctx.value(0)) {
    if (cond->numel() < 1) return ctx.error("cond has no element");
    NFUSE_ASSIGN_OR_RETURN(auto types, infer_subgraph(ctx.node, cond->get_double(0) != 0.0 ? *then_g : *else_g));
    if (static_cast<int>(types.size()) != ctx.num_outputs()) return ctx.error("branch output count mismatch");
    for (int i = 0; i < ctx.num_outputs(); ++i) ctx.output(i) = types[static_cast<size_t>(i)];
    return ok_status();
  }
  NFUSE_ASSIGN_OR_RETURN(auto then_types, infer_subgraph(ctx.node, *then_g));
  NFUSE_ASSIGN_OR_RETURN(auto else_types, infer_subgraph(ctx.node, *else_g));
  if (static_cast<int>(then_types.size()) != ctx.num_outputs() || else_types.size() != then_types.size()) {
    return ctx.error("branch output count mismatch");
  }
  for (size_t i = 0; i < then_types.size(); ++i) {
    const ir::TensorType& t = then_types[i];
    const ir::TensorType& e = else_types[i];
    if (t.dtype != ir::DType::kUndefined && e.dtype != ir::DType::kUndefined && t.dtype != e.dtype) {
      return ctx.error("output " + std::to_string(i) + " is " + std::string(ir::dtype_name(t.dtype)) +
                       " in then_branch but " + std::string(ir::dtype_name(e.dtype)) + " in else_branch");
    }
    ctx.output(static_cast<int>(i)) = {t.dtype != ir::DType::kUndefined ? t.dtype : e.dtype,
                                       merge_shapes(t.shape, e.shape)};
  }
  return ok_status();
}

}  // namespace

void register_control_flow_ops(ir::OpRegistry& registry) {
  // The kernel allocates its outputs: a branch's output shape may follow the run-time shape of an
  // outer value that the graph only knows as a symbol, which inference cannot see.
  registry.add(ir::OpSchema{.op_type = "If",
                            .min_inputs = 1,
                            .max_inputs = 1,
                            .min_outputs = 1,
                            .max_outputs = 1 << 16,
                            .verify = verify_if,
                            .infer = infer_if,
                            .kernel_allocates_outputs = true});
}

}  // namespace nfuse::ops
