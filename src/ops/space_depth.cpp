// DepthToSpace (DCR and CRD modes) and SpaceToDepth: NCHW block rearrangements.
#include "ops/builtin_ops.h"
#include "ops/op_helpers.h"
#include "ops/tensor_params.h"

namespace nfuse::ops {
namespace {

// Bounded so blocksize^2 cannot overflow; real models use 2..8.
constexpr int64_t kMaxBlocksize = int64_t{1} << 20;

Status verify_blocksize(const ir::Node& node) {
  auto b = node.attrs.require_int("blocksize");
  if (!b.ok()) return invalid_model(node.label() + ": " + b.status().message());
  if (*b < 1 || *b > kMaxBlocksize) return invalid_model(node.label() + ": blocksize must be in 1..2^20");
  return ok_status();
}

Status verify_depth_to_space(const ir::Node& node) {
  NFUSE_RETURN_IF_ERROR_PLAIN(verify_blocksize(node));
  const std::string mode = node.attrs.get_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") return invalid_model(node.label() + ": unknown mode '" + mode + "'");
  return ok_status();
}

// dim * factor, or dim / factor (which must divide it); unknown stays unknown.
Status scale_dim(const ir::InferContext& ctx, const ir::Dim& d, int64_t factor, bool divide, ir::Dim* out) {
  if (!d.is_static()) {
    *out = ir::Dim();
    return ok_status();
  }
  if (divide) {
    if (d.value % factor != 0) {
      return ctx.error("dim " + std::to_string(d.value) + " is not divisible by " + std::to_string(factor));
    }
    *out = ir::Dim(d.value / factor);
  } else {
    if (d.value > kMaxElements / factor) return ctx.error("output dims too large");
    *out = ir::Dim(d.value * factor);
  }
  return ok_status();
}

Status infer_space_depth(ir::InferContext& ctx, bool to_space) {
  ctx.output(0).dtype = ctx.dtype(0);
  const ir::Shape& in = ctx.shape(0);
  const int64_t b = ctx.attrs().get_int("blocksize", 1);
  if (!in.rank_known()) {
    ctx.output(0).shape = ir::Shape(std::vector<ir::Dim>(4));
    return ok_status();
  }
  if (in.rank() != 4) return ctx.error("input must be 4-D (NCHW), got " + in.to_string());
  std::vector<ir::Dim> out(4);
  out[0] = in[0];
  NFUSE_RETURN_IF_ERROR_PLAIN(scale_dim(ctx, in[1], b * b, to_space, &out[1]));
  NFUSE_RETURN_IF_ERROR_PLAIN(scale_dim(ctx, in[2], b, !to_space, &out[2]));
  NFUSE_RETURN_IF_ERROR_PLAIN(scale_dim(ctx, in[3], b, !to_space, &out[3]));
  ctx.output(0).shape = ir::Shape(std::move(out));
  return ok_status();
}

Status infer_depth_to_space(ir::InferContext& ctx) { return infer_space_depth(ctx, true); }
Status infer_space_to_depth(ir::InferContext& ctx) { return infer_space_depth(ctx, false); }

}  // namespace

void register_space_depth_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{.op_type = "DepthToSpace", .verify = verify_depth_to_space, .infer = infer_depth_to_space});
  registry.add(ir::OpSchema{.op_type = "SpaceToDepth", .verify = verify_blocksize, .infer = infer_space_to_depth});
}

}  // namespace nfuse::ops
