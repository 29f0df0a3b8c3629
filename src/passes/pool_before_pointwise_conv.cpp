#include "passes/pool_before_pointwise_conv.h"

#include <algorithm>
#include <optional>

#include "ops/fused_epilogue.h"
#include "passes/pass_util.h"

namespace nfuse::passes {
namespace {

bool all_equal(const std::vector<int64_t>& v, int64_t x) {
  return std::all_of(v.begin(), v.end(), [x](int64_t e) { return e == x; });
}

struct Channels {
  int64_t in = 0, out = 0;
};

// The conv's channels when it is a widening (in < out) 1x1 / stride 1 / unpadded float32 Conv
// without an epilogue, whose output is a per-pixel linear function of its input.
std::optional<Channels> widening_pointwise(const ir::Node& conv) {
  if (conv.op_type != "Conv" || !conv.domain.empty() || !conv.implicit_inputs.empty() || ops::has_fused_epilogue(conv))
    return std::nullopt;
  if (!is_f32(conv.input(0)) || !is_f32(conv.output(0))) return std::nullopt;
  const ir::Value* w = conv.input(1);
  const auto wd = w ? w->type.shape.static_dims() : std::nullopt;
  if (!wd || wd->size() != 4 || (*wd)[2] != 1 || (*wd)[3] != 1) return std::nullopt;
  const ir::Value* b = conv.input(2);
  if (b && !is_f32(b)) return std::nullopt;
  const std::string auto_pad = conv.attrs.get_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID") return std::nullopt;
  if (!all_equal(conv.attrs.get_ints("pads", {}), 0) || !all_equal(conv.attrs.get_ints("strides", {}), 1))
    return std::nullopt;
  const ir::Shape& xs = conv.input(0)->type.shape;
  if (!xs.rank_known() || xs.rank() != 4) return std::nullopt;
  const Channels c{(*wd)[1] * conv.attrs.get_int("group", 1), (*wd)[0]};
  if (c.in >= c.out) return std::nullopt;
  return c;
}

Result<bool> try_move(ir::Graph& graph, ir::Node& pool, PassLog& log) {
  if (pool.op_type != "GlobalAveragePool" || !pool.domain.empty() || !is_f32(pool.output(0))) return false;
  ir::Node* conv = producer_of(pool.input(0), "Conv");
  if (!conv) return false;
  const std::optional<Channels> c = widening_pointwise(*conv);
  if (!c) return false;

  ir::Value* x = conv->input(0);
  ir::Shape pooled_shape = x->type.shape;
  pooled_shape[2] = 1;
  pooled_shape[3] = 1;
  ir::Value* pooled = graph.add_unique_value(x->name + "_mean", ir::TensorType{ir::DType::kF32, pooled_shape});
  graph.add_node("GlobalAveragePool", pool.name + "_before_" + conv->name, {x}, {pooled})->opset = pool.opset;
  std::vector<ir::Value*> inputs = conv->inputs;
  inputs[0] = pooled;
  ir::Attributes attrs = conv->attrs;
  const std::string what = pool.label() + " of " + conv->label();
  ir::Value* mean = pool.output(0);
  graph.remove_node(&pool);
  ir::Node* moved = graph.add_node("Conv", conv->name + "_on_mean", std::move(inputs), {mean}, std::move(attrs));
  moved->opset = conv->opset;
  log.add("moved " + what + " before the convolution: it now averages " + std::to_string(c->in) +
          " channels, not " + std::to_string(c->out));
  return true;
}

}  // namespace

Status pool_before_pointwise_conv(ir::Graph& graph, PassLog& log) {
  auto r = rewrite_until_done(graph, [&](ir::Node& n) { return try_move(graph, n, log); });
  return r.status();
}

}  // namespace nfuse::passes
