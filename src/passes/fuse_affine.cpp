#include "passes/fuse_affine.h"

#include <cmath>

#include "ops/elementwise_util.h"
#include "ops/fused_epilogue.h"
#include "passes/pass_util.h"

namespace nfuse::passes {
namespace {

bool takes_affine(const ir::Node& p) {
  if (!p.domain.empty() || p.num_outputs() != 1 || !is_f32(p.output(0))) return false;
  if (p.op_type != "Conv" && p.op_type != "ConvTranspose" && p.op_type != "Gemm" && p.op_type != "MatMul") return false;
  return p.attrs.has(ops::kFusedActivationAttr) && !p.attrs.has(ops::kFusedAffineAttr);
}

// The scalar that `node` (a Mul or Add, as `op` says) combines with `y`, when the other input is
// a finite f32 constant of one element that cannot raise y's rank; nullopt otherwise.
std::optional<float> scalar_with(const ir::Node* node, const char* op, const ir::Value* y) {
  if (!node || node->op_type != op || !node->domain.empty() || !is_f32(node->output(0)) ||
      ops::uses_legacy_broadcast(*node))
    return std::nullopt;
  auto s = scalar_operand(*node);
  if (!s || s->other != y) return std::nullopt;
  const ir::Value* c = node->input(1 - s->other_index);
  if (!is_f32(c) || !y->type.shape.rank_known() || !c->type.shape.rank_known() ||
      c->type.shape.rank() > y->type.shape.rank() || !std::isfinite(s->scalar))
    return std::nullopt;
  return static_cast<float>(s->scalar);
}

Result<bool> try_fuse(ir::Graph& graph, ir::Node& p, PassLog& log) {
  if (!takes_affine(p)) return false;
  ir::Value* y = p.output(0);
  ir::Node* first = sole_consumer(y);
  float scale = 1.0f, shift = 0.0f;
  std::vector<ir::Node*> taken;
  if (auto a = scalar_with(first, "Mul", y)) {
    scale = *a;
    taken.push_back(first);
    ir::Node* second = sole_consumer(first->output(0));
    if (auto b = scalar_with(second, "Add", first->output(0))) {
      shift = *b;
      taken.push_back(second);
    }
  } else if (auto b = scalar_with(first, "Add", y)) {
    shift = *b;
    taken.push_back(first);
  } else {
    return false;
  }
  std::string chain;
  for (const ir::Node* n : taken) chain += (chain.empty() ? "" : " -> ") + n->label();
  p.attrs.set(ops::kFusedAffineAttr, std::vector<float>{scale, shift});
  p.outputs[0] = taken.back()->output(0);
  for (ir::Node* n : taken) graph.remove_node(n);
  log.add("fused " + chain + " into " + p.label() + " as the affine after its activation");
  return true;
}

}  // namespace

Status fuse_affine(ir::Graph& graph, PassLog& log) {
  auto r = rewrite_until_done(graph, [&](ir::Node& n) { return try_fuse(graph, n, log); });
  return r.status();
}

}  // namespace nfuse::passes
