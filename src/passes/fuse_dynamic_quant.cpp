#include "passes/fuse_dynamic_quant.h"

#include <optional>

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

// Where the per-output-channel constants of a fused node broadcast: along the last axis of a
// MatMul's output, along axis 1 of a Conv's ([N, M, spatial...]).
struct Channels {
  int64_t count = 0;
  int out_rank = 0;  // 0: the last axis (MatMul)
};

// One element, or `c.count` of them on the channel axis with every other dim 1 ([N] or [1, N] for
// a MatMul, [M, 1, 1] or [1, M, 1, 1] for a 2-D Conv) as the graph's broadcasting applies them.
bool per_channel(const ir::Tensor& t, const Channels& c) {
  if (t.numel() == 1) return true;
  if (t.numel() != c.count || t.rank() < 1) return false;
  if (c.out_rank == 0) return t.dims().back() == c.count;
  const int axis = t.rank() - (c.out_rank - 1);  // output axis 1 in t's dims, aligned right
  return t.rank() <= c.out_rank && axis >= 0 && t.dim(axis) == c.count;
}

// The f32 constant of one element per channel that `add` adds to y, with y's shape.
ir::Value* bias_of(const ir::Node& add, const ir::Value* y, const Channels& ch) {
  if (add.op_type != "Add" || !add.domain.empty() || add.num_inputs() != 2) return nullptr;
  ir::Value* c = add.input(0) == y ? add.input(1) : add.input(0);
  if (c == y || !is_const_of(c, ir::DType::kF32) || c->constant->numel() != ch.count ||
      !per_channel(*c->constant, ch)) {
    return nullptr;
  }
  return add.output(0)->type.shape == y->type.shape ? c : nullptr;
}

// The weight's channel layout, or nullopt where this pass does not apply: a MatMul's constant
// [K, N] matrix, a Conv's constant [M, C/group, kernel...] with ConvInteger's one zero point per
// tensor or per output channel (never broadcast along another axis).
std::optional<Channels> channels_of(const ir::Node& op, const ir::Tensor& w, const ir::Tensor& w_zp) {
  if (op.op_type == "MatMulInteger") {
    if (w.rank() != 2) return std::nullopt;
    Channels c{w.dim(1), 0};
    return per_channel(w_zp, c) ? std::optional<Channels>(c) : std::nullopt;
  }
  if (w.rank() < 3) return std::nullopt;
  if (w_zp.numel() != 1 && (w_zp.rank() != 1 || w_zp.numel() != w.dim(0))) return std::nullopt;
  return Channels{w.dim(0), static_cast<int>(w.rank())};
}

Result<bool> try_fuse(ir::Graph& graph, ir::Node& op, PassLog& log) {
  const bool conv = op.op_type == "ConvInteger";
  if ((!conv && op.op_type != "MatMulInteger") || !op.domain.empty() || op.num_inputs() != 4) return false;
  ir::Node* dql = producer_of(op.input(0), "DynamicQuantizeLinear");
  if (!dql || op.input(2) != dql->output(2) || !op.input(2)) return false;
  ir::Value* x = dql->input(0);
  ir::Value* w = op.input(1);
  ir::Value* w_zp = op.input(3);
  if (!is_f32(x) || !x->type.shape.rank_known() || x->type.shape.rank() < (conv ? 3 : 2)) return false;
  if (!w || !w->constant || w->constant->numel() == 0) return false;
  const ir::DType wt = w->constant->dtype();
  if ((wt != ir::DType::kU8 && wt != ir::DType::kI8) || !is_const_of(w_zp, wt)) return false;
  const std::optional<Channels> ch = channels_of(op, *w->constant, *w_zp->constant);
  if (!ch) return false;
  ir::Node* cast = sole_consumer(op.output(0));
  if (!cast || cast->op_type != "Cast" || cast->attrs.get_int("to", 0) != 1) return false;
  ir::Node* mul = sole_consumer(cast->output(0));
  if (!mul || mul->op_type != "Mul" || !mul->domain.empty() || mul->num_inputs() != 2) return false;
  ir::Value* s = mul->input(0) == cast->output(0) ? mul->input(1) : mul->input(0);
  ir::Value* w_scale = weight_scale_of(s, dql->output(1));
  if (!w_scale || !per_channel(*w_scale->constant, *ch)) return false;
  std::vector<ir::Value*> inputs{x, w, w_zp, w_scale};
  ir::Value* y = mul->output(0);
  ir::Node* add = sole_consumer(y);
  ir::Value* bias = add ? bias_of(*add, y, *ch) : nullptr;
  if (bias) {
    inputs.push_back(bias);
  } else {
    add = nullptr;
  }
  ir::Value* out = add ? add->output(0) : y;
  ir::Node* fused =
      graph.add_node(conv ? "DynamicQuantConv" : "DynamicQuantMatMul", op.name.empty() ? out->name : op.name, inputs,
                     {out}, conv ? op.attrs : ir::Attributes{});
  fused->domain = "nfuse";
  fused->opset = 1;
  if (!graph.opsets.count("nfuse")) graph.opsets["nfuse"] = 1;
  log.add("fused " + dql->label() + " -> " + op.label() + " -> " + cast->label() + " -> " + mul->label() +
          (add ? " -> " + add->label() : "") + " into " + fused->label());
  graph.remove_node(&op);
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
