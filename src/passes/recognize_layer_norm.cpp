#include "passes/recognize_layer_norm.h"

#include <algorithm>

#include "ops/elementwise_util.h"
#include "passes/pass_util.h"

namespace nfuse::passes {
namespace {

bool is_op(const ir::Node* n, const char* op) { return n && n->op_type == op && n->domain.empty(); }

// The first reduced axis of a keepdims ReduceMean over trailing axes of `x` (rank known);
// nullopt otherwise.
std::optional<int> trailing_mean_axis(const ir::Node& rm, const ir::Value* x) {
  if (!is_op(&rm, "ReduceMean") || rm.input(0) != x || !x->type.shape.rank_known()) return std::nullopt;
  const ir::Value* axes_in = rm.input(1);
  if (axes_in && !axes_in->constant) return std::nullopt;
  auto axes = ops::resolve_reduce_axes(rm, axes_in ? &*axes_in->constant : nullptr, x->type.shape.rank());
  if (!axes.ok() || axes->noop || !axes->keepdims) return std::nullopt;
  const std::vector<bool>& r = axes->reduced;
  auto first = std::find(r.begin(), r.end(), true);
  if (first == r.end() || !std::all_of(first, r.end(), [](bool b) { return b; })) return std::nullopt;
  return static_cast<int>(first - r.begin());
}

// A constant affine parameter as a tensor of the normalized dims: same element count (any
// broadcast-compatible layout), or one element repeated.
std::optional<ir::Tensor> as_normalized(const ir::Value* v, const std::vector<int64_t>& inner) {
  if (!v || !v->constant || v->constant->dtype() != ir::DType::kF32) return std::nullopt;
  const ir::Tensor& t = *v->constant;
  const int64_t n = ir::shape_numel(inner);
  if (t.numel() == n) {
    std::vector<int64_t> stripped;
    for (int64_t d : t.dims())
      if (d != 1 || !stripped.empty()) stripped.push_back(d);
    std::vector<int64_t> inner_stripped;
    for (int64_t d : inner)
      if (d != 1 || !inner_stripped.empty()) inner_stripped.push_back(d);
    if (stripped != inner_stripped) return std::nullopt;
    return t.clone().reshaped(inner);
  }
  if (t.numel() != 1) return std::nullopt;
  return ir::Tensor::from_vector(std::vector<float>(static_cast<size_t>(n), t.data<float>()[0]), inner);
}

struct Chain {
  ir::Value* x = nullptr;
  int axis = 0;
  double eps = 0;
  std::vector<ir::Node*> nodes;  // in order; the last one's output is the result
  ir::Value* gamma = nullptr;
  ir::Value* beta = nullptr;
};

// Pattern: mu = ReduceMean(x); d = Sub(x, mu); v = ReduceMean(Pow(d, 2) | Mul(d, d));
//          n = Div(d, Sqrt(Add(v, eps))) [-> Mul(n, gamma) [-> Add(., beta)]]
std::optional<Chain> match(ir::Node& rm1) {
  Chain c;
  c.x = rm1.input(0);
  auto axis = trailing_mean_axis(rm1, c.x);
  ir::Node* sub = sole_consumer(rm1.output(0));
  if (!axis || !is_f32(c.x) || !is_op(sub, "Sub") || sub->input(0) != c.x || sub->input(1) != rm1.output(0)) {
    return std::nullopt;
  }
  c.axis = *axis;
  ir::Value* d = sub->output(0);
  ir::Node* sq = nullptr;
  ir::Node* div = nullptr;
  for (ir::Node* u : d->consumers) {
    if (is_op(u, "Pow") && u->input(0) == d && is_scalar_constant(u->input(1), 2.0)) sq = u;
    else if (is_op(u, "Mul") && u->input(0) == d && u->input(1) == d) sq = u;
    else if (is_op(u, "Div") && u->input(0) == d) div = u;
  }
  if (!sq || !div || !only_used_by(d, {sq, div})) return std::nullopt;
  ir::Node* rm2 = sole_consumer(sq->output(0));
  if (!rm2 || trailing_mean_axis(*rm2, sq->output(0)) != c.axis) return std::nullopt;
  ir::Node* add = sole_consumer(rm2->output(0));
  auto eps = add && is_op(add, "Add") ? scalar_operand(*add) : std::nullopt;
  if (!eps || eps->other != rm2->output(0)) return std::nullopt;
  c.eps = eps->scalar;
  ir::Node* sqrt = sole_consumer(add->output(0));
  if (!is_op(sqrt, "Sqrt") || sole_consumer(sqrt->output(0)) != div || div->input(1) != sqrt->output(0)) {
    return std::nullopt;
  }
  c.nodes = {&rm1, sub, sq, rm2, add, sqrt, div};
  ir::Node* mul = sole_consumer(div->output(0));
  if (is_op(mul, "Mul") && mul->num_inputs() == 2) {
    c.gamma = mul->input(0) == div->output(0) ? mul->input(1) : mul->input(0);
    if (!c.gamma->constant) return c;
    c.nodes.push_back(mul);
    ir::Node* addb = sole_consumer(mul->output(0));
    if (is_op(addb, "Add") && addb->num_inputs() == 2) {
      c.beta = addb->input(0) == mul->output(0) ? addb->input(1) : addb->input(0);
      if (!c.beta->constant) c.beta = nullptr;
      else c.nodes.push_back(addb);
    }
  }
  return c;
}

Result<bool> try_recognize(ir::Graph& graph, ir::Node& rm1, PassLog& log) {
  std::optional<Chain> c = match(rm1);
  if (!c) return false;
  const ir::Shape& xs = c->x->type.shape;
  std::vector<int64_t> inner;
  for (int i = c->axis; i < xs.rank(); ++i) {
    if (!xs[i].is_static()) return false;
    inner.push_back(xs[i].value);
  }
  // Drop an affine step that cannot become a LayerNormalization parameter; it stays as is.
  std::optional<ir::Tensor> gamma = c->gamma ? as_normalized(c->gamma, inner) : std::nullopt;
  if (c->gamma && !gamma) {
    c->nodes.resize(7);
    c->gamma = c->beta = nullptr;
  }
  std::optional<ir::Tensor> beta = c->beta ? as_normalized(c->beta, inner) : std::nullopt;
  if (c->beta && !beta) {
    c->nodes.resize(8);
    c->beta = nullptr;
  }
  if (!gamma) gamma = ir::Tensor::from_vector(std::vector<float>(static_cast<size_t>(ir::shape_numel(inner)), 1.0f), inner);
  ir::Node* last = c->nodes.back();
  ir::Value* out = last->output(0);
  if (!same_rank_and_static_dims(out->type.shape, xs)) return false;
  std::vector<ir::Value*> inputs = {c->x, add_constant(graph, last->name + "_scale", std::move(*gamma))};
  if (beta) inputs.push_back(add_constant(graph, last->name + "_bias", std::move(*beta)));
  ir::Attributes attrs;
  attrs.set("axis", int64_t{c->axis});
  attrs.set("epsilon", static_cast<float>(c->eps));
  ir::Node* ln = graph.add_node("LayerNormalization", last->name, std::move(inputs), {}, std::move(attrs));
  ln->opset = 17;
  for (ir::Node* n : c->nodes) graph.remove_node(n);
  last->outputs[0] = nullptr;  // `out` has one producer from here on: the LayerNormalization
  ln->outputs = {out};
  log.add("replaced " + std::to_string(c->nodes.size()) + " nodes from " + rm1.label() + " to " + last->label() +
          " by LayerNormalization '" + ln->name + "' (axis " + std::to_string(c->axis) + ")");
  return true;
}

}  // namespace

Status recognize_layer_norm(ir::Graph& graph, PassLog& log) {
  auto r = rewrite_until_done(graph, [&](ir::Node& n) { return try_recognize(graph, n, log); });
  return r.status();
}

}  // namespace nfuse::passes
