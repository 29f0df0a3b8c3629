// Loop (opset 11+, tensor values only): inputs M (optional int64 trip count), cond (optional
// bool), v_initial[N]; body (iteration_num, cond, v[N]) -> (cond, v[N], scan[K]); outputs the
// final v[N] and the K per-iteration outputs stacked along a new leading axis.
// How many iterations run is data, so the kernel allocates its outputs
// (kernel_allocates_outputs); infer gives what is known without running the body: dtypes,
// the carried values' shapes where the body keeps them, and the scan outputs' per-step shape
// under an unknown leading dim.
#include <string>
#include <vector>

#include "ops/builtin_ops.h"
#include "ops/elementwise_util.h"
#include "ops/op_helpers.h"
#include "ops/subgraph_infer.h"

namespace nfuse::ops {
namespace {

Status verify_loop(const ir::Node& node) {
  auto body = node.attrs.get_graph("body");
  if (!body) return invalid_model(node.label() + ": graph attribute 'body' is missing");
  const int n = node.num_inputs() - 2;
  if (n < 0) return invalid_model(node.label() + ": needs the M and cond inputs (either may be empty)");
  for (int i = 2; i < node.num_inputs(); ++i)
    if (!node.has_input(i)) return invalid_model(node.label() + ": loop-carried input " + std::to_string(i) + " is missing");
  const int k = node.num_outputs() - n;
  if (k < 0) return invalid_model(node.label() + ": fewer outputs than loop-carried values");
  if (static_cast<int>(body->inputs().size()) != n + 2 || static_cast<int>(body->outputs().size()) != n + 1 + k) {
    return invalid_model(node.label() + ": body takes " + std::to_string(body->inputs().size()) + " inputs and gives " +
                         std::to_string(body->outputs().size()) + " outputs; expected " + std::to_string(n + 2) +
                         " and " + std::to_string(n + 1 + k));
  }
  return ok_status();
}

// The dims both shapes agree on; unknown where they differ.
ir::Shape merge_shapes(const ir::Shape& a, const ir::Shape& b) {
  if (!a.rank_known() || !b.rank_known() || a.rank() != b.rank()) return ir::Shape::unknown_rank();
  std::vector<ir::Dim> dims;
  for (int i = 0; i < a.rank(); ++i) dims.push_back(a[i] == b[i] ? a[i] : ir::Dim());
  return ir::Shape(std::move(dims));
}

Status infer_loop(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 0, dtype_bit(ir::DType::kI64)));
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 1, kBoolDTypes));
  const int n = ctx.num_inputs() - 2;
  const int k = ctx.num_outputs() - n;
  std::vector<ir::TensorType> body_in{{ir::DType::kI64, ir::Shape(std::vector<ir::Dim>{})},
                                      {ir::DType::kBool, ir::Shape(std::vector<ir::Dim>{})}};
  for (int i = 0; i < n; ++i) body_in.push_back(ctx.input(2 + i));
  NFUSE_ASSIGN_OR_RETURN(auto body_out, infer_subgraph(ctx.node, *ctx.attrs().get_graph("body"), body_in));
  if (static_cast<int>(body_out.size()) != 1 + n + k) return ctx.error("body output count mismatch");
  for (int i = 0; i < n; ++i) {
    const ir::TensorType& init = ctx.input(2 + i);
    const ir::TensorType& step = body_out[static_cast<size_t>(1 + i)];
    if (step.dtype != ir::DType::kUndefined && step.dtype != init.dtype) {
      return ctx.error("loop-carried value " + std::to_string(i) + " changes dtype in the body");
    }
    // Zero iterations give the initial value, others the body's: only what both agree on holds.
    ctx.output(i) = {init.dtype, merge_shapes(init.shape, step.shape)};
  }
  for (int j = 0; j < k; ++j) {
    const ir::TensorType& t = body_out[static_cast<size_t>(1 + n + j)];
    ir::Shape shape = ir::Shape::unknown_rank();
    if (t.shape.rank_known()) {
      std::vector<ir::Dim> dims{ir::Dim()};
      dims.insert(dims.end(), t.shape.dims().begin(), t.shape.dims().end());
      shape = ir::Shape(std::move(dims));
    }
    ctx.output(n + j) = {t.dtype, std::move(shape)};
  }
  return ok_status();
}

}  // namespace

void register_loop_ops(ir::OpRegistry& registry) {
  // M and cond are both optional but hold their places ("" in ONNX): verify_loop counts them,
  // the registry's presence check of the first min_inputs would reject an empty one.
  registry.add(ir::OpSchema{.op_type = "Loop",
                            .min_inputs = 0,
                            .max_inputs = 1 << 16,
                            .min_outputs = 0,
                            .max_outputs = 1 << 16,
                            .verify = verify_loop,
                            .infer = infer_loop,
                            .kernel_allocates_outputs = true});
}

}  // namespace nfuse::ops
