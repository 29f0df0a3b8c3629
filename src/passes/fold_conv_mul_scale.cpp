#include "passes/fold_conv_mul_scale.h"

#include "ops/fused_epilogue.h"
#include "passes/pass_util.h"

namespace nfuse::passes {
namespace {

// Pattern: Conv(x, W[, b]) -> y -> Mul(y, s) | Mul(s, y) -> z
//          (y used only by the Mul; W, b and s float32 constants; s per output channel
//           ([C], [C,1,1], [1,C,1,1]) or a scalar)
//     ->   Conv(x, W * s[cout], b * s) -> z
Result<bool> try_fold(ir::Graph& graph, ir::Node& mul) {
  if (mul.op_type != "Mul" || !mul.domain.empty() || mul.num_inputs() != 2 || !mul.has_input(0) || !mul.has_input(1)) {
    return false;
  }
  for (int side = 0; side < 2; ++side) {
    ir::Value* y = mul.input(side);
    const ir::Value* s = mul.input(1 - side);
    ir::Node* p = producer_of(y, "Conv");
    if (!p || sole_consumer(y) != &mul || ops::has_fused_epilogue(*p) || !is_f32(y) || !s->constant) continue;
    const ir::Value* w = p->input(1);
    const ir::Value* b = p->input(2);
    if (!w || !w->constant || w->constant->dtype() != ir::DType::kF32 || !y->type.shape.rank_known()) continue;
    auto channels = conv_output_channels(*p);
    if (!channels || w->constant->dim(0) != *channels) continue;
    auto scale = per_channel_constant(*s->constant, y->type.shape.rank(), *channels);
    if (!scale) continue;
    if (b && (!b->constant || b->constant->dtype() != ir::DType::kF32 || b->constant->numel() != *channels)) continue;
    const ir::Tensor& wt = *w->constant;
    ir::Tensor nw = ir::Tensor::allocate(ir::DType::kF32, wt.dims());
    const int64_t per = wt.numel() / *channels;  // Conv weights are [Cout, Cin/g, k...]
    for (int64_t i = 0; i < wt.numel(); ++i) {
      nw.data<float>()[i] = wt.data<float>()[i] * (*scale)[static_cast<size_t>(i / per)];
    }
    set_constant_input(graph, *p, 1, w->name + "_mul", std::move(nw));
    if (b) {
      std::vector<float> nb(static_cast<size_t>(*channels));
      for (size_t c = 0; c < nb.size(); ++c) nb[c] = b->constant->data<float>()[c] * (*scale)[c];
      set_constant_input(graph, *p, 2, b->name + "_mul", ir::Tensor::from_vector(nb, {*channels}));
    }
    p->outputs[0] = mul.output(0);
    graph.remove_node(&mul);
    return true;
  }
  return false;
}

}  // namespace

Status fold_conv_mul_scale(ir::Graph& graph, PassLog& log) {
  auto r = rewrite_until_done(graph, [&](ir::Node& n) -> Result<bool> {
    const std::string mul = n.label();
    NFUSE_ASSIGN_OR_RETURN(bool folded, try_fold(graph, n));
    if (folded) log.add("folded " + mul + " into the weights of its convolution");
    return folded;
  });
  return r.status();
}

}  // namespace nfuse::passes
