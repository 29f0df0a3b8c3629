#include "passes/fuse_dynamic_quant.h"

#include "passes/eliminate_dead_code.h"
#include "passes/pass_util.h"

namespace nfuse::passes {
namespace {

bool is_const_of(const ir::Value* v, ir::DType t) { return v && v->constant && v->constant->dtype() == t; }

// The f32 constant of `s = Mul(x_scale, c)` or `Mul(c, x_scale)`, given x_scale; null otherwise.
ir::Value* weight_scale_of(const ir::Value* s, const ir::Value* x_scale) {
  ir::Node* mul = producer_of(s, "Mul");
  if (!mul || mul->num_inputs() != 2) return nullptr;
  ir::Value* other = mul->input(0) == x_scale ? mul->input(1) : mul->input(1) == x_scale ? mul->input(0) : nullptr;
  return is_const_of(other, ir::DType::kF32) ? other : nullptr;
}

// One element, or N along the last axis ([N], [1, N], ...).
bool per_column(const ir::Tensor& t, int64_t n) {
  if (t.numel() == 1) return true;
  if (t.rank() < 1 || t.dims().back() != n) return false;
  return t.numel() == n;
}

// The f32 constant of N elements along the last axis that `add` adds to y, with y's shape.
ir::Value* bias_of(const ir::Node& add, const ir::Value* y, int64_t n) {
  if (add.op_type != "Add" || !add.domain.empty() || add.num_inputs() != 2) return nullptr;
  ir::Value* c = add.input(0) == y ? add.input(1) : add.input(0);
  if (c == y || !is_const_of(c, ir::DType::kF32) || c->constant->numel() != n || c->constant->dims().back() != n) {
    return nullptr;
  }
  return add.output(0)->type.shape == y->type.shape ? c : nullptr;
}

Result<bool> try_fuse(ir::Graph& graph, ir::Node& mm, PassLog& log) {
  if (mm.op_type != "MatMulInteger" || !mm.domain.empty() || mm.num_inputs() != 4) return false;
  ir::Node* dql = producer_of(mm.input(0), "DynamicQuantizeLinear");
  if (!dql || mm.input(2) != dql->output(2) || !mm.input(2)) return false;
  ir::Value* x = dql->input(0);
  ir::Value* w = mm.input(1);
  ir::Value* w_zp = mm.input(3);
  if (!is_f32(x) || !x->type.shape.rank_known() || x->type.shape.rank() < 2) return false;
  if (!w || !w->constant || w->constant->rank() != 2 || w->constant->numel() == 0) return false;
  const ir::DType wt = w->constant->dtype();
  if ((wt != ir::DType::kU8 && wt != ir::DType::kI8) || !is_const_of(w_zp, wt)) return false;
  const int64_t n = w->constant->dim(1);
  if (!per_column(*w_zp->constant, n)) return false;
  ir::Node* cast = sole_consumer(mm.output(0));
  if (!cast || cast->op_type != "Cast" || cast->attrs.get_int("to", 0) != 1) return false;
  ir::Node* mul = sole_consumer(cast->output(0));
  if (!mul || mul->op_type != "Mul" || !mul->domain.empty() || mul->num_inputs() != 2) return false;
  ir::Value* s = mul->input(0) == cast->output(0) ? mul->input(1) : mul->input(0);
  ir::Value* w_scale = weight_scale_of(s, dql->output(1));
  if (!w_scale || !per_column(*w_scale->constant, n)) return false;
  std::vector<ir::Value*> inputs{x, w, w_zp, w_scale};
  ir::Value* y = mul->output(0);
  ir::Node* add = sole_consumer(y);
  ir::Value* bias = add ? bias_of(*add, y, n) : nullptr;
  if (bias) {
    inputs.push_back(bias);
  } else {
    add = nullptr;
  }
  ir::Value* out = add ? add->output(0) : y;
  ir::Node* fused = graph.add_node("DynamicQuantMatMul", mm.name.empty() ? out->name : mm.name, inputs, {out});
  fused->domain = "nfuse";
  fused->opset = 1;
  if (!graph.opsets.count("nfuse")) graph.opsets["nfuse"] = 1;
  log.add("fused " + dql->label() + " -> " + mm.label() + " -> " + cast->label() + " -> " + mul->label() +
          (add ? " -> " + add->label() : "") + " into " + fused->label());
  graph.remove_node(&mm);
  graph.remove_node(cast);
  graph.remove_node(mul);
  if (add) graph.remove_node(add);
  return true;
}

}  // namespace

Status fuse_dynamic_quant(ir::Graph& graph, PassLog& log) {
  NFUSE_ASSIGN_OR_RETURN(int fused, rewrite_until_done(graph, [&](ir::Node& n) { return try_fuse(graph, n, log); }));
  // The quantizers and scale products the fused nodes replaced.
  if (fused > 0) NFUSE_RETURN_IF_ERROR_PLAIN(eliminate_dead_code(graph, {}, log));
  return ok_status();
}

}  // namespace nfuse::passes
