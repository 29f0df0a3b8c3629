#include "passes/fuse_matmul_bias.h"

#include "ops/fused_epilogue.h"
#include "passes/pass_util.h"

namespace nfuse::passes {
namespace {

// The bias's element count when c is a float32 constant broadcast along y's last axis only
// ([N], [1, N], [1, 1, N], ... of rank <= y's rank, N = y's static last dim).
bool is_last_axis_bias(const ir::Value* c, const ir::Shape& y) {
  if (!c || !c->constant || c->constant->dtype() != ir::DType::kF32) return false;
  if (!y.rank_known() || y.rank() < 1 || !y.dims().back().is_static()) return false;
  const ir::Tensor& t = *c->constant;
  if (t.rank() < 1 || t.rank() > y.rank() || t.dims().back() != y.dims().back().value) return false;
  for (int i = 0; i + 1 < t.rank(); ++i)
    if (t.dim(i) != 1) return false;
  return true;
}

// Pattern: MatMul(x, W) -> y;  Add(y, c) or Add(c, y) -> z
//          (W a float32 constant [K, N], y float32 used only by the Add and of the same shape as
//           z, c a float32 constant of N elements broadcast along the last axis, MatMul without
//           an epilogue yet)
//     ->   MatMul(x, W) [nfuse.bias = 1, implicit input c] -> z
Result<bool> try_fuse(ir::Graph& graph, ir::Node& p, PassLog& log) {
  if (p.op_type != "MatMul" || !p.domain.empty() || p.num_outputs() != 1 || p.num_inputs() != 2) return false;
  if (ops::has_fused_epilogue(p) || !p.implicit_inputs.empty()) return false;
  const ir::Value* w = p.input(1);
  if (!w || !w->constant || w->constant->dtype() != ir::DType::kF32 || w->constant->rank() != 2) return false;
  ir::Value* y = p.output(0);
  ir::Node* add = sole_consumer(y);
  if (!is_f32(y) || !add || add->op_type != "Add" || !add->domain.empty() || add->num_inputs() != 2) return false;
  ir::Value* c = add->input(0) == y ? add->input(1) : add->input(0);
  ir::Value* z = add->output(0);
  if (c == y || !is_last_axis_bias(c, y->type.shape) || !(z->type.shape == y->type.shape)) return false;
  p.implicit_inputs = {c};
  p.attrs.set(ops::kFusedBiasAttr, int64_t{1});
  p.outputs[0] = z;
  graph.remove_node(add);
  log.add("fused " + add->label() + " into " + p.label() + " as bias '" + c->name + "'");
  return true;
}

}  // namespace

Status fuse_matmul_bias(ir::Graph& graph, PassLog& log) {
  auto r = rewrite_until_done(graph, [&](ir::Node& n) { return try_fuse(graph, n, log); });
  return r.status();
}

}  // namespace nfuse::passes
