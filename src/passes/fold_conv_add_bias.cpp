#include "passes/fold_conv_add_bias.h"

#include "ops/fused_epilogue.h"
#include "passes/pass_util.h"

namespace nfuse::passes {
namespace {

// Pattern: P(x, W[, b]) -> y -> Add(y, c) | Add(c, y) -> z
//          (P = Conv | ConvTranspose, y used only by the Add, c a float32 constant per output
//           channel ([C], [C,1,1], [1,C,1,1]) or a scalar)
//     ->   P(x, W, b + c) -> z
Result<bool> try_fold(ir::Graph& graph, ir::Node& add) {
  if (add.op_type != "Add" || !add.domain.empty() || add.num_inputs() != 2 || !add.has_input(0) || !add.has_input(1)) {
    return false;
  }
  for (int side = 0; side < 2; ++side) {
    ir::Value* y = add.input(side);
    const ir::Value* c = add.input(1 - side);
    ir::Node* p = producer_of(y);
    if (!p || (p->op_type != "Conv" && p->op_type != "ConvTranspose")) continue;
    if (sole_consumer(y) != &add || ops::has_fused_epilogue(*p) || !is_f32(y) || !c->constant) continue;
    if (!y->type.shape.rank_known()) continue;
    auto channels = conv_output_channels(*p);
    if (!channels) continue;
    auto values = per_channel_constant(*c->constant, y->type.shape.rank(), *channels);
    if (!values) continue;
    const ir::Value* b = p->input(2);
    if (b && (!b->constant || b->constant->dtype() != ir::DType::kF32 || b->constant->numel() != *channels)) continue;
    for (size_t i = 0; i < values->size(); ++i) {
      if (b) (*values)[i] += b->constant->data<float>()[i];
    }
    set_constant_input(graph, *p, 2, (b ? b->name : p->name + "_bias") + "_add",
                       ir::Tensor::from_vector(*values, {*channels}));
    p->outputs[0] = add.output(0);
    graph.remove_node(&add);
    return true;
  }
  return false;
}

}  // namespace

Status fold_conv_add_bias(ir::Graph& graph, PassLog& log) {
  auto r = rewrite_until_done(graph, [&](ir::Node& n) -> Result<bool> {
    const std::string add = n.label();
    NFUSE_ASSIGN_OR_RETURN(bool folded, try_fold(graph, n));
    if (folded) log.add("folded " + add + " into the bias of its convolution");
    return folded;
  });
  return r.status();
}

}  // namespace nfuse::passes
