#include "passes/factor_residual_scale.h"

#include "ops/elementwise_util.h"
#include "passes/pass_util.h"

namespace nfuse::passes {
namespace {

Result<bool> try_factor(ir::Graph& graph, ir::Node& add) {
  // Opset < 7 Mul / Add broadcast by their `broadcast` / `axis` attributes, which the new nodes
  // would not carry.
  if (add.op_type != "Add" || !add.domain.empty() || add.num_inputs() != 2 || !is_f32(add.output(0)) ||
      ops::uses_legacy_broadcast(add))
    return false;
  for (int side = 0; side < 2; ++side) {
    ir::Value* m = add.input(side);
    ir::Value* x = add.input(1 - side);
    ir::Node* mul = producer_of(m, "Mul");
    if (!mul || mul->num_inputs() != 2 || ops::uses_legacy_broadcast(*mul) || sole_consumer(m) != &add || !is_f32(x))
      continue;
    const int xi = mul->input(0) == x ? 0 : mul->input(1) == x ? 1 : -1;
    if (xi < 0) continue;
    // x * s + x == x * (s + 1) under any broadcast: both have the shape of x and s broadcast
    // together, so s's shape needs no check (and s may even be x).
    ir::Value* s = mul->input(1 - xi);
    if (!is_f32(s)) continue;

    ir::Value* one = add_constant(graph, s->name + "_one", ir::Tensor::from_vector(std::vector<float>{1.0f}, {}));
    ir::Value* s1 = graph.add_unique_value(s->name + "_plus_one", s->type);
    ir::Value* out = add.output(0);
    const std::string name = add.name;
    const int add_opset = add.opset, mul_opset = mul->opset;
    graph.add_node("Add", mul->name + "_plus_one", {s, one}, {s1})->opset = add_opset;
    graph.remove_node(&add);
    graph.remove_node(mul);
    graph.add_node("Mul", name, {x, s1}, {out})->opset = mul_opset;
    return true;
  }
  return false;
}

}  // namespace

Status factor_residual_scale(ir::Graph& graph, PassLog& log) {
  auto r = rewrite_until_done(graph, [&](ir::Node& n) -> Result<bool> {
    const std::string what = n.label();
    NFUSE_ASSIGN_OR_RETURN(bool factored, try_factor(graph, n));
    if (factored) log.add("factored " + what + " of a value and its rescaled copy into one Mul by (scale + 1)");
    return factored;
  });
  return r.status();
}

}  // namespace nfuse::passes
