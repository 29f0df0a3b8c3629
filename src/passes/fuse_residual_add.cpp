#include "passes/fuse_residual_add.h"

#include "ops/fused_epilogue.h"
#include "passes/pass_util.h"

namespace nfuse::passes {
namespace {

// Static and equal, or equal dim by dim including symbols: the residual needs no broadcast.
bool same_shape(const ir::Shape& a, const ir::Shape& b) {
  if (!a.rank_known() || !(a == b)) return false;
  for (const ir::Dim& d : a.dims())
    if (!d.is_static() && d.symbol.empty()) return false;
  return true;
}

// Pattern: P(...) -> y;  Add(y, r) or Add(r, y) -> z   (y used only by the Add, r of y's shape,
//          P = Conv | ConvTranspose | Gemm | MatMul without an epilogue yet, or with only the
//          fused bias of fuse_matmul_bias, which the epilogue adds before the residual)
//     ->   P(...) [nfuse.residual = 1, implicit input r] -> z
Result<bool> try_fuse(ir::Graph& graph, ir::Node& p, PassLog& log) {
  if (!p.domain.empty() || p.num_outputs() != 1) return false;
  const bool bias_only = p.attrs.has(ops::kFusedBiasAttr) && !p.attrs.has(ops::kFusedResidualAttr) &&
                         !p.attrs.has(ops::kFusedActivationAttr) && !p.attrs.has(ops::kFusedActivationParamsAttr) &&
                         !p.attrs.has(ops::kFusedAffineAttr) && p.implicit_inputs.size() == 1;
  if (!bias_only && (ops::has_fused_epilogue(p) || !p.implicit_inputs.empty())) return false;
  if (p.op_type != "Conv" && p.op_type != "ConvTranspose" && p.op_type != "Gemm" && p.op_type != "MatMul") {
    return false;
  }
  ir::Value* y = p.output(0);
  ir::Node* add = sole_consumer(y);
  if (!is_f32(y) || !add || add->op_type != "Add" || !add->domain.empty() || add->num_inputs() != 2) return false;
  ir::Value* r = add->input(0) == y ? add->input(1) : add->input(0);
  ir::Value* z = add->output(0);
  if (!r || r == y || r->type.dtype != y->type.dtype || !same_shape(r->type.shape, y->type.shape) ||
      !same_shape(z->type.shape, y->type.shape)) {
    return false;
  }
  p.implicit_inputs.insert(p.implicit_inputs.begin(), r);  // the residual is implicit input 0
  p.attrs.set(ops::kFusedResidualAttr, int64_t{1});
  p.outputs[0] = z;
  graph.remove_node(add);
  log.add("fused " + add->label() + " into " + p.label() + " as residual '" + r->name + "'");
  return true;
}

}  // namespace

Status fuse_residual_add(ir::Graph& graph, PassLog& log) {
  auto r = rewrite_until_done(graph, [&](ir::Node& n) { return try_fuse(graph, n, log); });
  return r.status();
}

}  // namespace nfuse::passes
