#include "passes/recognize_gelu.h"

#include <cmath>
#include <numbers>

#include "passes/pass_util.h"

namespace nfuse::passes {
namespace {

bool is_op(const ir::Node* n, const char* op) { return n && n->op_type == op && n->domain.empty(); }

// x when `v` = Div(x, sqrt 2) or Mul(x, 1 / sqrt 2), v's producer in `nodes`.
ir::Value* erf_argument(ir::Value* v, std::vector<ir::Node*>& nodes) {
  ir::Node* n = producer_of(v);
  if (!n || v->consumers.size() != 1) return nullptr;
  auto s = scalar_operand(*n);
  if (!s) return nullptr;
  const bool div = is_op(n, "Div") && s->other_index == 0 && std::fabs(s->scalar - std::numbers::sqrt2) < 1e-4;
  const bool mul = is_op(n, "Mul") && std::fabs(s->scalar - 1.0 / std::numbers::sqrt2) < 1e-4;
  if (!div && !mul) return nullptr;
  nodes.push_back(n);
  return s->other;
}

// x when `v` = Mul(k, Add(x, Mul(0.044715, x^3))) with k = sqrt(2/pi), x^3 as Pow(x, 3) or
// Mul(x, Mul(x, x)); the nodes go into `nodes`.
ir::Value* tanh_argument(ir::Value* v, std::vector<ir::Node*>& nodes) {
  ir::Node* scale = producer_of(v, "Mul");
  auto k = scale ? scalar_operand(*scale) : std::nullopt;
  if (!k || v->consumers.size() != 1 || std::fabs(k->scalar - std::sqrt(2.0 / std::numbers::pi)) > 1e-4) return nullptr;
  ir::Node* add = producer_of(k->other, "Add");
  if (!add || sole_consumer(k->other) != scale || add->num_inputs() != 2) return nullptr;
  for (int i = 0; i < 2; ++i) {
    ir::Value* x = add->input(i);
    ir::Value* cubic_scaled = add->input(1 - i);
    ir::Node* c = producer_of(cubic_scaled, "Mul");
    auto a = c ? scalar_operand(*c) : std::nullopt;
    if (!a || sole_consumer(cubic_scaled) != add || std::fabs(a->scalar - 0.044715) > 1e-6) continue;
    ir::Node* cube = producer_of(a->other);
    if (!cube || sole_consumer(a->other) != c) continue;
    std::vector<ir::Node*> found = {scale, add, c, cube};
    if (is_op(cube, "Pow") && cube->input(0) == x && is_scalar_constant(cube->input(1), 3.0)) {
      // x^3 directly
    } else if (is_op(cube, "Mul") && cube->num_inputs() == 2) {
      ir::Value* sq = cube->input(0) == x ? cube->input(1) : cube->input(0);
      ir::Node* sqn = producer_of(sq, "Mul");
      if (!sqn || sole_consumer(sq) != cube || sqn->input(0) != x || sqn->input(1) != x) continue;
      found.push_back(sqn);
    } else {
      continue;
    }
    nodes.insert(nodes.end(), found.begin(), found.end());
    return x;
  }
  return nullptr;
}

struct Match {
  ir::Value* x = nullptr;
  std::vector<ir::Node*> nodes;
  ir::Value* out = nullptr;
};

// From a = Add(f, 1) (f = Erf or Tanh output): Mul(Mul(x, a), 0.5), Mul(Mul(x, 0.5), a) or
// Mul(x, Mul(a, 0.5)), with products in either order.
bool match_tail(ir::Value* a, Match& m) {
  ir::Node* m1 = sole_consumer(a);
  if (!is_op(m1, "Mul") || m1->num_inputs() != 2) return false;
  ir::Value* y = m1->input(0) == a ? m1->input(1) : m1->input(0);
  if (is_scalar_constant(y, 0.5)) {  // Mul(x, Mul(a, 0.5))
    ir::Node* m2 = sole_consumer(m1->output(0));
    if (!is_op(m2, "Mul") || m2->num_inputs() != 2) return false;
    ir::Value* x = m2->input(0) == m1->output(0) ? m2->input(1) : m2->input(0);
    if (x != m.x) return false;
    m.nodes.insert(m.nodes.end(), {m1, m2});
    m.out = m2->output(0);
    return true;
  }
  if (y == m.x) {  // Mul(Mul(x, a), 0.5)
    ir::Node* m2 = sole_consumer(m1->output(0));
    auto half = m2 && is_op(m2, "Mul") ? scalar_operand(*m2) : std::nullopt;
    if (!half || half->other != m1->output(0) || std::fabs(half->scalar - 0.5) > 1e-6) return false;
    m.nodes.insert(m.nodes.end(), {m1, m2});
    m.out = m2->output(0);
    return true;
  }
  ir::Node* h = producer_of(y, "Mul");  // Mul(Mul(x, 0.5), a)
  auto half = h ? scalar_operand(*h) : std::nullopt;
  if (!half || half->other != m.x || std::fabs(half->scalar - 0.5) > 1e-6 || sole_consumer(y) != m1) return false;
  m.nodes.insert(m.nodes.end(), {h, m1});
  m.out = m1->output(0);
  return true;
}

// Pattern: Erf(x / sqrt 2) -> Add 1 -> (x * 0.5 * .)                 ->  Gelu(x)
//          Tanh(sqrt(2/pi) * (x + 0.044715 x^3)) -> Add 1 -> (x * 0.5 * .)  ->  Gelu(x, tanh)
Result<bool> try_recognize(ir::Graph& graph, ir::Node& f, PassLog& log) {
  const bool erf = is_op(&f, "Erf");
  if (!erf && !is_op(&f, "Tanh")) return false;
  Match m;
  m.x = erf ? erf_argument(f.input(0), m.nodes) : tanh_argument(f.input(0), m.nodes);
  if (!m.x || !is_f32(m.x)) return false;
  m.nodes.push_back(&f);
  ir::Node* add = sole_consumer(f.output(0));
  auto one = add && is_op(add, "Add") ? scalar_operand(*add) : std::nullopt;
  if (!one || one->other != f.output(0) || one->scalar != 1.0) return false;
  m.nodes.push_back(add);
  if (!match_tail(add->output(0), m) || !same_rank_and_static_dims(m.out->type.shape, m.x->type.shape)) return false;
  ir::Node* last = m.nodes.back();
  ir::Attributes attrs;
  if (!erf) attrs.set("approximate", std::string("tanh"));
  ir::Node* gelu = graph.add_node("Gelu", last->name, {m.x}, {}, std::move(attrs));
  gelu->domain = "nfuse";
  gelu->opset = 1;
  for (ir::Node* n : m.nodes) graph.remove_node(n);
  last->outputs[0] = nullptr;  // `out` has one producer from here on: the Gelu
  gelu->outputs = {m.out};
  if (!graph.opsets.count("nfuse")) graph.opsets["nfuse"] = 1;
  log.add("replaced " + std::to_string(m.nodes.size()) + " nodes from " + m.nodes.front()->label() + " to " +
          last->label() + " by nfuse.Gelu '" + gelu->name + "'" + (erf ? "" : " (approximate = tanh)"));
  return true;
}

}  // namespace

Status recognize_gelu(ir::Graph& graph, PassLog& log) {
  auto r = rewrite_until_done(graph, [&](ir::Node& n) { return try_recognize(graph, n, log); });
  return r.status();
}

}  // namespace nfuse::passes
